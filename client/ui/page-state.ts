/**
 * What the page keeps across a reload, in this tab's sessionStorage (never the token): the
 * current session id, the ids (and typed messages) of the turns it shows, and the "keep running"
 * choice. A reloaded page reads it back and follows those turns again.
 */

export interface StoredTurn {
  turnId: string
  /** The message as typed; null when the turn was opened from a list. */
  message: string | null
}

export interface PageState {
  sessionId: string | undefined
  turns: StoredTurn[]
  detach: boolean
}

const KEY = 'tollgate.page'
/** Bounds what a tab keeps: the most recent turns, and each message cut to a size the page can show. */
const MAX_TURNS = 20
const MAX_MESSAGE_CHARS = 4000
const ID = /^[A-Za-z0-9_-]{1,128}$/

function isId (value: unknown): value is string {
  return typeof value === 'string' && ID.test(value)
}

/** Reads the saved state; anything malformed (an older page, a hand edit) reads as empty. */
export function loadPageState (storage: Storage): PageState {
  const empty: PageState = { sessionId: undefined, turns: [], detach: false }
  let raw: unknown
  try {
    raw = JSON.parse(storage.getItem(KEY) ?? 'null')
  } catch {
    return empty
  }
  if (typeof raw !== 'object' || raw === null) return empty
  const data = raw as Record<string, unknown>
  const turns = Array.isArray(data.turns) ? data.turns : []
  return {
    sessionId: isId(data.sessionId) ? data.sessionId : undefined,
    turns: turns.flatMap((t: unknown) => {
      const turn = t as Record<string, unknown> | null
      if (turn === null || typeof turn !== 'object' || !isId(turn.turnId)) return []
      return [{ turnId: turn.turnId, message: typeof turn.message === 'string' ? turn.message.slice(0, MAX_MESSAGE_CHARS) : null }]
    }).slice(-MAX_TURNS),
    detach: data.detach === true
  }
}

export function savePageState (storage: Storage, state: PageState): void {
  const turns = state.turns.slice(-MAX_TURNS).map((t) => ({ turnId: t.turnId, message: t.message?.slice(0, MAX_MESSAGE_CHARS) ?? null }))
  try {
    storage.setItem(KEY, JSON.stringify({ sessionId: state.sessionId, turns, detach: state.detach }))
  } catch {
    // Storage full or disabled (private mode): the page still works, it just forgets on reload.
  }
}
