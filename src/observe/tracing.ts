/**
 * OpenTelemetry spans from observer records, through @opentelemetry/api only: without a
 * registered SDK every span is a non-recording no-op and nothing is kept. With one, a turn is a
 * span and each model request and tool call is a child of it, carrying the correlation fields.
 * Arguments and results never go into spans (size, secrets); statuses and ids do.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api'
import type { Observer, ObserverCorrelation, ObserverEvent } from './observer.js'

export const TRACER_NAME = 'tollgate'

interface TurnSpans {
  span: Span
  context: Context
  tools: Map<string, Span>
  /** Requests of one turn are sequential: at most one is open. */
  llm: Span | null
}

function correlationAttributes (e: ObserverCorrelation): Attributes {
  return { 'tollgate.turn_id': e.turn_id, 'tollgate.session_id': e.session_id, 'tollgate.agent': e.agent, 'tollgate.channel': e.channel }
}

/** A child span that never got its own end record (a cancelled model request) ends with its turn. */
function endUnfinished (span: Span): void {
  span.setAttribute('tollgate.unfinished', true)
  span.end()
}

export class TracingObserver implements Observer {
  private readonly tracer: Tracer
  private readonly turns = new Map<string, TurnSpans>()

  /** The default provider is the global one, so an SDK registered later still receives spans. */
  constructor (provider: TracerProvider = trace.getTracerProvider()) {
    this.tracer = provider.getTracer(TRACER_NAME)
  }

  record (event: ObserverEvent): void {
    if (event.kind === 'turn_start') {
      this.startTurn(event)
      return
    }
    const turn = this.turns.get(event.turn_id)
    if (turn === undefined) return
    switch (event.kind) {
      case 'llm_request':
        if (turn.llm !== null) endUnfinished(turn.llm)
        turn.llm = this.tracer.startSpan(`chat ${event.model}`, {
          kind: SpanKind.CLIENT,
          attributes: {
            ...correlationAttributes(event),
            'gen_ai.operation.name': 'chat',
            'gen_ai.request.model': event.model,
            'tollgate.provider': event.provider,
            'tollgate.messages': event.messages,
            'tollgate.tools': event.tools
          }
        }, turn.context)
        return
      case 'llm_response': {
        const span = turn.llm
        if (span === null) return
        turn.llm = null
        if (event.input_tokens !== undefined) span.setAttribute('gen_ai.usage.input_tokens', event.input_tokens)
        if (event.output_tokens !== undefined) span.setAttribute('gen_ai.usage.output_tokens', event.output_tokens)
        if (!event.success) span.setStatus({ code: SpanStatusCode.ERROR, message: event.error ?? 'provider request failed' })
        span.end()
        return
      }
      case 'tool_call_start':
        turn.tools.get(event.call_id)?.end()
        turn.tools.set(event.call_id, this.tracer.startSpan(`execute_tool ${event.tool}`, {
          attributes: {
            ...correlationAttributes(event),
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': event.tool,
            'gen_ai.tool.call.id': event.call_id,
            ...(event.provider_call_id === undefined ? {} : { 'tollgate.provider_call_id': event.provider_call_id })
          }
        }, turn.context))
        return
      case 'tool_call': {
        const span = turn.tools.get(event.call_id)
        if (span === undefined) return
        turn.tools.delete(event.call_id)
        span.setAttributes({ 'tollgate.tool.status': event.status, 'tollgate.tool.success': event.success, 'tollgate.tool.duration_ms': event.duration_ms })
        if (!event.success) span.setStatus({ code: SpanStatusCode.ERROR, message: event.status })
        span.end()
        return
      }
      case 'approval':
        turn.span.addEvent('approval', {
          'tollgate.approval.decision': event.decision,
          'tollgate.approval.decided_by': event.decided_by,
          'tollgate.approval.channel': event.approval_channel,
          'gen_ai.tool.name': event.tool,
          'gen_ai.tool.call.id': event.call_id
        })
        return
      case 'turn_end':
        this.turns.delete(event.turn_id)
        for (const span of turn.tools.values()) endUnfinished(span)
        if (turn.llm !== null) endUnfinished(turn.llm)
        turn.span.setAttributes({ 'tollgate.turn.status': event.status, 'tollgate.turn.iterations': event.iterations })
        if (event.status === 'failed') turn.span.setStatus({ code: SpanStatusCode.ERROR, message: event.code ?? 'failed' })
        turn.span.end()
    }
  }

  private startTurn (event: Extract<ObserverEvent, { kind: 'turn_start' }>): void {
    const parent = context.active()
    const span = this.tracer.startSpan('tollgate.turn', {
      attributes: { ...correlationAttributes(event), 'tollgate.provider': event.provider, 'gen_ai.request.model': event.model }
    }, parent)
    // No SDK (or not sampled): nothing to remember, nothing to end later.
    if (!span.isRecording()) return
    this.turns.set(event.turn_id, { span, context: trace.setSpan(parent, span), tools: new Map(), llm: null })
  }

  /** Ends whatever is still open (shutdown); later records of those turns are ignored. */
  close (): void {
    for (const turn of this.turns.values()) {
      for (const span of turn.tools.values()) endUnfinished(span)
      if (turn.llm !== null) endUnfinished(turn.llm)
      endUnfinished(turn.span)
    }
    this.turns.clear()
  }
}
