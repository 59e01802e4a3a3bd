/**
 * OpenTelemetry spans from observer records, through @opentelemetry/api only: without a
 * registered SDK every span is a non-recording no-op and nothing is kept. With one, spans follow
 * the OpenTelemetry GenAI semantic conventions (agent, inference and execute_tool spans):
 *
 *   invoke_agent {agent}          one per turn
 *     tollgate.iteration          one per model/tool round
 *       chat {model}              the provider request of that round
 *       execute_tool {tool}       each call of that round that reached dispatch
 *
 * Arguments, messages and results never go into spans (size, secrets); statuses and ids do.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api'
import { genAiProviderName, genAiToolType } from './gen-ai.js'
import type { Observer, ObserverCorrelation, ObserverEvent } from './observer.js'

export const TRACER_NAME = 'tollgate'
export const ITERATION_SPAN = 'tollgate.iteration'

interface OpenSpan {
  span: Span
  context: Context
}

interface TurnSpans extends OpenSpan {
  /** The round in progress; model requests and tool calls are its children. */
  iteration: OpenSpan | null
  tools: Map<string, Span>
  /** Requests of one turn are sequential: at most one is open. */
  llm: Span | null
}

type Of<K extends ObserverEvent['kind']> = Extract<ObserverEvent, { kind: K }>

function correlationAttributes (e: ObserverCorrelation): Attributes {
  return { 'tollgate.turn_id': e.turn_id, 'tollgate.session_id': e.session_id, 'tollgate.agent': e.agent, 'tollgate.channel': e.channel }
}

/** Failed spans carry `error.type` (a stable, low-cardinality reason) and an ERROR status. */
function fail (span: Span, type: string, message: string): void {
  span.setAttribute('error.type', type)
  span.setStatus({ code: SpanStatusCode.ERROR, message })
}

/** A child span that never got its own end record (a cancelled model request) ends with its parent. */
function endUnfinished (span: Span): void {
  span.setAttribute('tollgate.unfinished', true)
  span.end()
}

function endChildren (turn: TurnSpans): void {
  for (const span of turn.tools.values()) endUnfinished(span)
  turn.tools.clear()
  if (turn.llm !== null) endUnfinished(turn.llm)
  turn.llm = null
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
      case 'iteration':
        // A delegated sub-turn's rounds happen inside the parent's delegate call: its requests and
        // calls stay in the parent's round instead of closing it.
        if (event.delegate_depth === 0) this.startIteration(turn, event)
        return
      case 'llm_request':
        if (turn.llm !== null) endUnfinished(turn.llm)
        turn.llm = this.startChat(turn, event)
        return
      case 'llm_response': {
        const span = turn.llm
        if (span === null) return
        turn.llm = null
        endChat(span, event)
        return
      }
      case 'tool_call_start':
        turn.tools.get(event.call_id)?.end()
        turn.tools.set(event.call_id, this.startTool(turn, event))
        return
      case 'tool_call': {
        const span = turn.tools.get(event.call_id)
        if (span === undefined) return
        turn.tools.delete(event.call_id)
        span.setAttributes({ 'tollgate.tool.status': event.status, 'tollgate.tool.success': event.success })
        if (!event.success) fail(span, event.error_type ?? event.status, event.status)
        span.end()
        return
      }
      case 'approval':
        turn.span.addEvent('approval', {
          'tollgate.approval.decision': event.decision,
          'tollgate.approval.decided_by': event.decided_by,
          'tollgate.approval.channel': event.approval_channel,
          'gen_ai.tool.name': event.tool,
          'tollgate.tool.call_id': event.call_id
        })
        return
      case 'turn_end':
        this.turns.delete(event.turn_id)
        endChildren(turn)
        turn.iteration?.span.end()
        turn.span.setAttributes({ 'tollgate.turn.status': event.status, 'tollgate.turn.iterations': event.iterations })
        if (event.status === 'failed') fail(turn.span, event.code ?? 'failed', event.code ?? 'failed')
        turn.span.end()
    }
  }

  private startTurn (event: Of<'turn_start'>): void {
    const parent = context.active()
    const span = this.tracer.startSpan(`invoke_agent ${event.agent}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': event.agent,
        'gen_ai.conversation.id': event.session_id,
        'gen_ai.provider.name': genAiProviderName(event.provider_kind),
        'gen_ai.request.model': event.model,
        'tollgate.provider': event.provider,
        ...correlationAttributes(event)
      }
    }, parent)
    // No SDK (or not sampled): nothing to remember, nothing to end later.
    if (!span.isRecording()) return
    this.turns.set(event.turn_id, { span, context: trace.setSpan(parent, span), iteration: null, tools: new Map(), llm: null })
  }

  /** A round ends when the next one starts or the turn ends (the cap's closing summary stays in the last round). */
  private startIteration (turn: TurnSpans, event: Of<'iteration'>): void {
    endChildren(turn)
    turn.iteration?.span.end()
    const span = this.tracer.startSpan(ITERATION_SPAN, {
      kind: SpanKind.INTERNAL,
      attributes: { 'tollgate.iteration': event.n, ...correlationAttributes(event) }
    }, turn.context)
    turn.iteration = { span, context: trace.setSpan(turn.context, span) }
  }

  private startChat (turn: TurnSpans, event: Of<'llm_request'>): Span {
    return this.tracer.startSpan(`chat ${event.model}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': genAiProviderName(event.provider_kind),
        'gen_ai.request.model': event.model,
        ...(event.server_address === undefined ? {} : { 'server.address': event.server_address }),
        ...(event.server_port === undefined ? {} : { 'server.port': event.server_port }),
        'tollgate.provider': event.provider,
        ...(event.fallback_from === undefined ? {} : { 'tollgate.fallback_from': event.fallback_from }),
        'tollgate.messages': event.messages,
        'tollgate.tools': event.tools,
        ...correlationAttributes(event)
      }
    }, (turn.iteration ?? turn).context)
  }

  private startTool (turn: TurnSpans, event: Of<'tool_call_start'>): Span {
    const type = event.provenance === undefined ? undefined : genAiToolType(event.provenance)
    return this.tracer.startSpan(`execute_tool ${event.tool}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': event.tool,
        ...(type === undefined ? {} : { 'gen_ai.tool.type': type }),
        // The model's id for the call is what correlates with the chat it came from; text-protocol calls have none.
        ...(event.provider_call_id === undefined ? {} : { 'gen_ai.tool.call.id': event.provider_call_id }),
        'tollgate.tool.call_id': event.call_id,
        ...correlationAttributes(event)
      }
    }, (turn.iteration ?? turn).context)
  }

  /** Ends whatever is still open (shutdown); later records of those turns are ignored. */
  close (): void {
    for (const turn of this.turns.values()) {
      endChildren(turn)
      if (turn.iteration !== null) endUnfinished(turn.iteration.span)
      endUnfinished(turn.span)
    }
    this.turns.clear()
  }
}

function endChat (span: Span, event: Of<'llm_response'>): void {
  if (event.response_model !== undefined) span.setAttribute('gen_ai.response.model', event.response_model)
  if (event.response_id !== undefined) span.setAttribute('gen_ai.response.id', event.response_id)
  if (event.finish_reason !== undefined) span.setAttribute('gen_ai.response.finish_reasons', [event.finish_reason])
  if (event.input_tokens !== undefined) span.setAttribute('gen_ai.usage.input_tokens', event.input_tokens)
  if (event.output_tokens !== undefined) span.setAttribute('gen_ai.usage.output_tokens', event.output_tokens)
  if (event.cost_usd !== undefined) span.setAttribute('tollgate.usage.cost_usd', event.cost_usd)
  if (!event.success) fail(span, event.error_type ?? 'provider_error', event.error ?? 'provider request failed')
  span.end()
}
