/**
 * The browser page served at `/`: start turns, watch them, answer approvals, cancel. It talks
 * to the gateway it was served from, with the client SDK, and survives dropped sockets (the SDK
 * resumes every turn; the page only ever renders the events the SDK hands it, once each) and
 * reloads (the tab's sessionStorage keeps the session and turn ids; the reloaded page follows
 * those turns again from their first event, so pending prompts come back with their cards).
 */
import {
  TollgateClient, TollgateClientError, type ClientNotice, type EventEnvelope, type TurnRequest, type TurnStream
} from '@tollgate/client'
import { PromptAnnouncer } from './announcer.js'
import { startCountdowns } from './countdown.js'
import { byId, el } from './dom.js'
import { Inbox } from './inbox.js'
import { loadPageState, savePageState, type PageState } from './page-state.js'
import { SessionsView } from './sessions-view.js'
import { TurnView } from './turn-view.js'

interface Page {
  client: TollgateClient
  state: PageState
  views: Map<string, TurnView>
  announcer: PromptAnnouncer
  inbox: Inbox
  sessions: SessionsView
  connection: HTMLElement
  notices: HTMLOListElement
  log: HTMLOListElement
  turns: HTMLElement
  form: HTMLFormElement
  message: HTMLTextAreaElement
  agent: HTMLInputElement
  detach: HTMLInputElement
  send: HTMLButtonElement
  formError: HTMLElement
  session: HTMLElement
  running: number
  /** The turn the form started and still runs: the form steers it (its messages join its history). */
  current: string | null
}

/** How long a prompt waits before it is announced: a replay that settles it right after shows it only briefly, silently. */
const ANNOUNCE_DELAY_MS = 150

function describe (error: unknown): string {
  return error instanceof TollgateClientError ? `${error.code}: ${error.message}` : String(error)
}

function note (page: Page, text: string, kind: string): void {
  page.notices.append(el('li', { class: `notice notice-${kind}`, text: `${new Date().toLocaleTimeString()} ${text}` }))
  while (page.notices.childElementCount > 200) page.notices.firstElementChild?.remove()
}

function showNotice (page: Page, notice: ClientNotice): void {
  if (notice.type === 'state') {
    page.connection.dataset.state = notice.state
    page.connection.textContent = notice.state === 'reconnecting' ? `reconnecting (attempt ${notice.attempt})` : notice.state
    if (notice.state === 'reconnecting' && notice.closeCode !== undefined) note(page, `socket closed (${notice.closeCode}); reconnecting`, 'state')
    if (notice.state === 'closed') note(page, 'disconnected; reload the page to try again', 'state')
    return
  }
  if (notice.type === 'subscribed') {
    if (notice.resumed) note(page, `resumed ${notice.turnId} after seq ${notice.afterSeq} (gateway at seq ${notice.serverLastSeq})`, 'resume')
    return
  }
  note(page, `${notice.turnId === undefined ? '' : `${notice.turnId}: `}${describe(notice.error)}`, 'error')
}

function logEvent (page: Page, envelope: EventEnvelope): void {
  const e = envelope.event
  const detail = 'name' in e ? ` ${e.name}` : ''
  const status = e.kind === 'tool_result' ? ` ${e.status}` : e.kind === 'approval.resolved' ? ` ${e.decision}` : ''
  page.log.append(el('li', {
    text: `${envelope.turn_id} #${envelope.seq} ${e.kind}${detail}${status}`,
    attrs: { 'data-turn-id': envelope.turn_id, 'data-seq': String(envelope.seq), 'data-kind': e.kind }
  }))
}

function setRunning (page: Page, delta: number): void {
  page.running += delta
  showSendMode(page)
}

/** While the form's turn runs, the button sends the message to it; until its id is known, it waits. */
function showSendMode (page: Page): void {
  const steering = page.running > 0 && page.current !== null
  page.send.disabled = page.running > 0 && page.current === null
  page.send.textContent = steering ? 'Send to the running turn' : 'Start turn'
  page.form.dataset.mode = steering ? 'steer' : 'start'
}

async function steerTurn (page: Page, turnId: string, message: string): Promise<void> {
  try {
    await page.client.steer(turnId, message)
  } catch (err) {
    page.formError.hidden = false
    page.formError.textContent = describe(err)
  }
}

function setSession (page: Page, sessionId: string | undefined): void {
  if (page.state.sessionId !== sessionId) page.state.turns = []
  page.state.sessionId = sessionId
  page.session.textContent = sessionId ?? 'new'
  savePageState(sessionStorage, page.state)
}

function remember (page: Page, turnId: string, message: string | null): void {
  if (page.state.turns.some((t) => t.turnId === turnId)) return
  page.state.turns.push({ turnId, message })
  savePageState(sessionStorage, page.state)
}

function forget (page: Page, turnId: string): void {
  page.state.turns = page.state.turns.filter((t) => t.turnId !== turnId)
  savePageState(sessionStorage, page.state)
}

function newView (page: Page, turnId: string, message: string | null): TurnView {
  const view = new TurnView(page.client, turnId, message, (requestId, prompt, text) => {
    setTimeout(() => { page.announcer.announce(requestId, prompt, text) }, ANNOUNCE_DELAY_MS)
  })
  page.views.set(turnId, view)
  page.turns.prepend(view.root)
  return view
}

/** Renders a turn's stream until its terminal event; approvals asked or settled refresh the inbox. */
async function render (page: Page, view: TurnView, stream: TurnStream): Promise<void> {
  try {
    for await (const envelope of stream) {
      logEvent(page, envelope)
      view.apply(envelope)
      const kind = envelope.event.kind
      if (kind === 'approval.requested' || kind === 'approval.resolved') void page.inbox.refresh()
    }
  } catch (err) {
    view.fail(err)
    // A turn this principal cannot see (gone, another token) is not kept for the next reload.
    if (err instanceof TollgateClientError && err.code === 'TURN_NOT_FOUND') forget(page, view.turnId)
  } finally {
    void page.sessions.refresh()
  }
}

/** A turn started from the form holds the Start button until it ends; a followed turn does not. */
async function runTurn (page: Page, request: TurnRequest): Promise<void> {
  setRunning(page, 1)
  try {
    let stream: TurnStream
    try {
      stream = await page.client.startTurn(request)
    } catch (err) {
      page.formError.hidden = false
      page.formError.textContent = describe(err)
      return
    }
    setSession(page, stream.sessionId ?? page.state.sessionId)
    remember(page, stream.turnId, request.message)
    page.current = stream.turnId
    showSendMode(page)
    await render(page, newView(page, stream.turnId, request.message), stream)
  } finally {
    page.current = null
    setRunning(page, -1)
  }
}

/** Follows a turn this page is not showing yet (after a reload, or opened from a list) from its first event. */
function followTurn (page: Page, turnId: string, message: string | null): void {
  const shown = page.views.get(turnId)
  if (shown !== undefined) {
    shown.root.scrollIntoView({ block: 'nearest' })
    return
  }
  remember(page, turnId, message)
  const view = newView(page, turnId, message)
  void render(page, view, page.client.subscribe(turnId, { afterSeq: 0 }))
}

function start (): void {
  const client = new TollgateClient({ url: window.location.origin, clientName: 'tollgate-web' })
  const partial = {
    client,
    state: loadPageState(sessionStorage),
    views: new Map<string, TurnView>(),
    announcer: new PromptAnnouncer(byId('announcer')),
    connection: byId('connection'),
    notices: byId<HTMLOListElement>('notices'),
    log: byId<HTMLOListElement>('event-log'),
    turns: byId('turns'),
    form: byId<HTMLFormElement>('turn-form'),
    message: byId<HTMLTextAreaElement>('message'),
    agent: byId<HTMLInputElement>('agent'),
    detach: byId<HTMLInputElement>('detach'),
    send: byId<HTMLButtonElement>('send'),
    formError: byId('form-error'),
    session: byId('session-id'),
    running: 0,
    current: null as string | null
  }
  const openTurn = (turnId: string): void => { followTurn(page, turnId, null) }
  const page: Page = {
    ...partial,
    inbox: new Inbox(client, byId('inbox-list'), byId('inbox-status'), openTurn, (requestId, prompt, text) => {
      partial.announcer.announce(requestId, prompt, text)
    }, (turnId) => partial.views.has(turnId)),
    sessions: new SessionsView(client, byId('session-list'), byId('running-list'), byId('sessions-status'), {
      openTurn,
      continueSession: (sessionId) => { setSession(page, sessionId) }
    })
  }
  client.on((notice) => { showNotice(page, notice) })
  page.session.textContent = page.state.sessionId ?? 'new'
  page.detach.checked = page.state.detach
  startCountdowns(document.body)

  page.form.addEventListener('submit', (event) => {
    event.preventDefault()
    const message = page.message.value.trim()
    if (message === '') return
    page.formError.hidden = true
    if (page.current !== null) {
      page.message.value = ''
      void steerTurn(page, page.current, message)
      return
    }
    const agent = page.agent.value.trim()
    const request: TurnRequest = {
      message,
      ...(page.state.sessionId === undefined ? {} : { session_id: page.state.sessionId }),
      ...(agent === '' ? {} : { agent }),
      ...(page.detach.checked ? { detach: true } : {})
    }
    page.message.value = ''
    void runTurn(page, request)
  })

  page.detach.addEventListener('change', () => {
    page.state.detach = page.detach.checked
    savePageState(sessionStorage, page.state)
  })

  byId<HTMLButtonElement>('new-session').addEventListener('click', () => { setSession(page, undefined) })
  byId<HTMLButtonElement>('refresh-lists').addEventListener('click', () => {
    void page.sessions.refresh()
    void page.inbox.refresh()
  })

  byId<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
    event.preventDefault()
    const field = byId<HTMLInputElement>('token')
    try {
      client.setToken(field.value.trim())
      note(page, field.value.trim() === '' ? 'token cleared; reconnecting' : 'token set; reconnecting', 'state')
      void page.sessions.refresh()
      void page.inbox.refresh()
    } catch (err) {
      note(page, describe(err), 'error')
    }
  })

  // Oldest first, so the newest ends on top as it was before the reload.
  for (const { turnId, message } of page.state.turns) followTurn(page, turnId, message)
  client.connect().catch((err: unknown) => { note(page, describe(err), 'error') })
  page.inbox.start()
  void page.sessions.refresh()
}

start()
