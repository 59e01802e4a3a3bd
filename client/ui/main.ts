/**
 * The browser page served at `/`: start turns, watch them, answer approvals, cancel. It talks
 * to the gateway it was served from, with the client SDK, and survives dropped sockets (the SDK
 * resumes every turn; the page only ever renders the events the SDK hands it, once each).
 */
import { TollgateClient, TollgateClientError, type ClientNotice, type EventEnvelope, type TurnRequest } from '@tollgate/client'
import { byId, el } from './dom.js'
import { TurnView } from './turn-view.js'

interface Page {
  client: TollgateClient
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
  sessionId: string | undefined
  running: number
}

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
  page.send.disabled = page.running > 0
}

async function runTurn (page: Page, request: TurnRequest): Promise<void> {
  setRunning(page, 1)
  try {
    const stream = await page.client.startTurn(request)
    page.sessionId = stream.sessionId
    page.session.textContent = stream.sessionId ?? ''
    const view = new TurnView(page.client, stream.turnId, request.message)
    page.turns.prepend(view.root)
    try {
      for await (const envelope of stream) {
        logEvent(page, envelope)
        view.apply(envelope)
      }
    } catch (err) {
      view.fail(err)
    }
  } catch (err) {
    page.formError.hidden = false
    page.formError.textContent = describe(err)
  } finally {
    setRunning(page, -1)
  }
}

function start (): void {
  const client = new TollgateClient({ url: window.location.origin, clientName: 'tollgate-web' })
  const page: Page = {
    client,
    connection: byId('connection'),
    notices: byId('notices'),
    log: byId('event-log'),
    turns: byId('turns'),
    form: byId('turn-form'),
    message: byId('message'),
    agent: byId('agent'),
    detach: byId('detach'),
    send: byId('send'),
    formError: byId('form-error'),
    session: byId('session-id'),
    sessionId: undefined,
    running: 0
  }
  client.on((notice) => { showNotice(page, notice) })

  page.form.addEventListener('submit', (event) => {
    event.preventDefault()
    const message = page.message.value.trim()
    if (message === '') return
    page.formError.hidden = true
    const agent = page.agent.value.trim()
    const request: TurnRequest = {
      message,
      ...(page.sessionId === undefined ? {} : { session_id: page.sessionId }),
      ...(agent === '' ? {} : { agent }),
      ...(page.detach.checked ? { detach: true } : {})
    }
    page.message.value = ''
    void runTurn(page, request)
  })

  byId<HTMLButtonElement>('new-session').addEventListener('click', () => {
    page.sessionId = undefined
    page.session.textContent = 'new'
  })

  byId<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
    event.preventDefault()
    const field = byId<HTMLInputElement>('token')
    try {
      client.setToken(field.value.trim())
      note(page, field.value.trim() === '' ? 'token cleared; reconnecting' : 'token set; reconnecting', 'state')
    } catch (err) {
      note(page, describe(err), 'error')
    }
  })

  client.connect().catch((err: unknown) => { note(page, describe(err), 'error') })
}

start()
