/**
 * Drives a real terminal program through tmux: a private tmux server (its own socket, no user
 * config), one detached session running the command, keys sent with `send-keys`, the screen read
 * with `capture-pane`. Only this server is ever killed. tmux missing is a failure, not a skip:
 * scripts/test-prereqs.sh and .ci/run install it.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { promisify } from 'node:util'
import { eventually } from './eventually.js'

const run = promisify(execFile)
export const TMUX = '/usr/bin/tmux'

export function requireTmux (): void {
  assert.ok(existsSync(TMUX), `tmux is not installed at ${TMUX}: run \`apt-get install -y tmux\` (scripts/test-prereqs.sh does this)`)
}

export interface TmuxTerminal {
  /** Types `text` literally, then presses Enter. */
  typeLine (text: string): Promise<void>
  /** The whole pane, scrollback included, wrapped lines joined. */
  screen (): Promise<string>
  /** Polls the pane until `re` matches; fails with the screen when it never does. */
  waitFor (re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>
  close (): Promise<void>
}

/** Starts `command` (argv) in a fresh tmux server, in `cwd`, on a 200×50 terminal. */
export async function startInTmux (command: string[], cwd: string): Promise<TmuxTerminal> {
  requireTmux()
  const socket = `tollgate-test-${process.pid}-${Math.random().toString(36).slice(2, 10)}`
  const tmux = async (...args: string[]): Promise<string> => (await run(TMUX, ['-L', socket, '-f', '/dev/null', ...args], { cwd })).stdout
  // The shell wrapper keeps the pane (and its output) after the program exits, and records the exit code.
  const quoted = command.map((a) => `'${a.replaceAll('\'', '\'\\\'\'')}'`).join(' ')
  await tmux('new-session', '-d', '-s', 'main', '-x', '200', '-y', '50', '-c', cwd, `${quoted}; echo "[exited $?]"; sleep 600`)
  await tmux('set-option', '-t', 'main', 'history-limit', '10000')
  const socketPath = (await tmux('display-message', '-p', '-t', 'main', '#{socket_path}')).trim()
  const screen = async (): Promise<string> => await tmux('capture-pane', '-p', '-J', '-S', '-', '-t', 'main')
  return {
    typeLine: async (text) => {
      await tmux('send-keys', '-t', 'main', '-l', text)
      await tmux('send-keys', '-t', 'main', 'Enter')
    },
    screen,
    waitFor: async (re, timeoutMs = 20_000) => {
      let text = ''
      let m: RegExpExecArray | null = null
      await eventually(async () => (m = re.exec(text = await screen())) !== null, { what: String(re), timeoutMs })
        .catch(() => { throw new Error(`the terminal never showed ${String(re)}; screen:\n${text}`) })
      return m as unknown as RegExpExecArray
    },
    close: async () => {
      await tmux('kill-server').catch(() => {})
      // The server leaves its socket file behind; it is this test's, so it goes too.
      if (socketPath.includes(socket)) await rm(socketPath, { force: true })
    }
  }
}
