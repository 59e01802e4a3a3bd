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

/** The loop's safe points a durable turn checkpoints at. */
export const CHECKPOINT_STEPS = ['model', 'approval', 'dispatch'] as const
export type ObservedCheckpointStep = typeof CHECKPOINT_STEPS[number]

/** Where a tool came from (its attribution's provenance); absent for a name nothing resolves. */
export type ObservedToolProvenance = 'native' | 'extension'

/**
 * Durations are milliseconds as measured (fractional, never rounded): metrics and spans keep the
 * sub-millisecond resolution; log lines may round for reading.
 */
export type ObserverEvent =
  | ({ kind: 'turn_start', provider: string, provider_kind: string, model: string } & ObserverCorrelation)
  | ({ kind: 'turn_end', status: string, duration_ms: number, iterations: number, code?: string } & ObserverCorrelation)
  /** `delegate_depth` > 0: a round of a delegated sub-turn, which records under its parent turn's ids. */
  | ({ kind: 'iteration', n: number, delegate_depth: number } & ObserverCorrelation)
  | ({
    kind: 'llm_request', provider: string, provider_kind: string, model: string, messages: number, tools: number,
    server_address?: string, server_port?: number,
    /** The provider whose failure this call falls back from (`agents.<a>.fallback_providers`). */
    fallback_from?: string
  } & ObserverCorrelation)
  | ({
    kind: 'llm_response', provider: string, model: string, duration_ms: number, success: boolean, error?: string, error_type?: string,
    input_tokens?: number, output_tokens?: number, response_id?: string, response_model?: string, finish_reason?: string,
    /** USD of the call at the configured price; absent when unknown. */
    cost_usd?: number
    tenant?: string
  } & ObserverCorrelation)
  | ({
    kind: 'tool_call_start', tool: string, call_id: string, provider_call_id?: string,
    provenance?: ObservedToolProvenance, arguments: unknown
  } & ObserverCorrelation)
  | ({
    kind: 'tool_call', tool: string, call_id: string, provider_call_id?: string, arguments: unknown, duration_ms: number,
    success: boolean, status: string, error_type?: string, result: string
  } & ObserverCorrelation)
  | ({ kind: 'approval', tool: string, call_id: string, request_id: string | null, decision: string, decided_by: string, approval_channel: string, principal: string } & ObserverCorrelation)
  /**
   * A permission rules' decision at the approval gate; `mode = "shadow"`: it was only counted, and
   * `requirement` (what the gate did) came from the profile's other settings.
   */
  | ({
    kind: 'permission', tool: string, call_id: string, rule: string, outcome: string, mode: 'enforce' | 'shadow',
    policy_version: string, requirement: string, reason: string,
    /** A shell call's parsed plan: each simple command with its outcome and rule, and the hazards. */
    plan?: unknown
  } & ObserverCorrelation)
  /** A tool receipt was signed for an executed call (the audit chain keeps it). */
  | ({ kind: 'receipt', tool: string, call_id: string, receipt: string } & ObserverCorrelation)
  /** A durable turn's checkpoint could not be made at `step`; the turn went on from its last one. */
  | ({ kind: 'checkpoint_failed', step: ObservedCheckpointStep } & ObserverCorrelation)

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
