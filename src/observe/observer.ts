/**
 * Observer seam: structured lifecycle records for logs, metrics and tracing. Consumers must
 * ignore kinds they do not know. `arguments` are scrubbed before they get here, `result` too.
 */

export interface ObserverCorrelation {
  turn_id: string
  session_id: string
  agent: string
  channel: string
}

export type ObserverEvent =
  | ({ kind: 'turn_start', provider: string, model: string } & ObserverCorrelation)
  | ({ kind: 'turn_end', status: string, duration_ms: number, iterations: number, code?: string } & ObserverCorrelation)
  | ({ kind: 'llm_request', provider: string, model: string, messages: number, tools: number } & ObserverCorrelation)
  | ({ kind: 'llm_response', provider: string, model: string, duration_ms: number, success: boolean, error?: string, input_tokens?: number, output_tokens?: number } & ObserverCorrelation)
  | ({ kind: 'tool_call_start', tool: string, call_id: string, provider_call_id?: string, arguments: unknown } & ObserverCorrelation)
  | ({ kind: 'tool_call', tool: string, call_id: string, provider_call_id?: string, arguments: unknown, duration_ms: number, success: boolean, status: string, result: string } & ObserverCorrelation)
  | ({ kind: 'approval', tool: string, call_id: string, request_id: string | null, decision: string, decided_by: string, approval_channel: string, principal: string } & ObserverCorrelation)

export interface Observer {
  record (event: ObserverEvent): void
}

/** Fans one event out to many observers; a throwing observer never breaks a turn or its siblings. */
export function composeObservers (observers: readonly Observer[], onError: (err: unknown) => void): Observer {
  return {
    record (event) {
      for (const o of observers) {
        try {
          o.record(event)
        } catch (err) {
          onError(err)
        }
      }
    }
  }
}
