/**
 * Risk classification of shell commands. It errs towards the stricter class: a command only counts as
 * low risk when it is provably a pipeline of read-only commands, and high-risk patterns are searched
 * for with quotes removed, so quoting or `sh -c "..."` wrapping does not hide them.
 */

export type CommandRisk = 'low' | 'medium' | 'high'

const LOW_RISK_COMMANDS = new Set([
  'echo', 'printf', 'ls', 'pwd', 'cat', 'head', 'tail', 'wc', 'date', 'whoami', 'uname', 'id', 'env',
  'grep', 'find', 'sort', 'uniq', 'cut', 'tr', 'true', 'false', 'basename', 'dirname', 'stat', 'file',
  'du', 'df', 'which', 'sleep'
])

// Anywhere in the text, even quoted: keeps the low-risk lexer small and can only make a command stricter.
const NOT_LOW_RISK_TEXT = /[;&<>`\n\r]|\$\(|\$\{/

// Commands whose options can write files or run programs; a glob could smuggle such an option in
// through a crafted file name (`find . *` with a file named `-delete`).
const OPTION_SENSITIVE_COMMANDS = new Set(['find', 'sort', 'uniq', 'date', 'file', 'env'])

const FIND_ACTIONS = new Set(['-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint', '-fprint0', '-fprintf', '-fls'])

interface Word {
  text: string
  unquotedGlob: boolean
}

/** Splits a pipeline into words per stage, honouring quotes; null when it cannot be read with certainty. */
function lexPipeline (command: string): Word[][] | null {
  const stages: Word[][] = [[]]
  let word: Word | null = null
  let quote: '\'' | '"' | null = null
  const current = (): Word => {
    word ??= { text: '', unquotedGlob: false }
    return word
  }
  const endWord = (): void => {
    if (word !== null) stages[stages.length - 1]?.push(word)
    word = null
  }
  for (let i = 0; i < command.length; i++) {
    const ch = command[i] as string
    if (quote === '\'') {
      if (ch === '\'') quote = null
      else current().text += ch
    } else if (quote === '"') {
      if (ch === '"') {
        quote = null
      } else if (ch === '\\' && i + 1 < command.length && '"\\$`'.includes(command[i + 1] as string)) {
        current().text += command[++i] as string
      } else {
        current().text += ch
      }
    } else if (ch === '\'' || ch === '"') {
      current()
      quote = ch
    } else if (ch === '\\') {
      if (i + 1 >= command.length) return null
      current().text += command[++i] as string
    } else if (ch === ' ' || ch === '\t') {
      endWord()
    } else if (ch === '|') {
      endWord()
      stages.push([])
    } else {
      const w = current()
      w.text += ch
      if ('*?['.includes(ch)) w.unquotedGlob = true
    }
  }
  if (quote !== null) return null
  endWord()
  return stages
}

function hasShortFlag (word: string, flag: string): boolean {
  return /^-[A-Za-z0-9]+$/.test(word) && word.slice(1).includes(flag)
}

function argumentsAreReadOnly (name: string, args: Word[]): boolean {
  if (OPTION_SENSITIVE_COMMANDS.has(name) && args.some((a) => a.unquotedGlob)) return false
  const words = args.map((a) => a.text)
  switch (name) {
    case 'env':
      // With arguments env runs another program, which would escape the allowlist.
      return words.length === 0
    case 'find':
      return !words.some((w) => FIND_ACTIONS.has(w))
    case 'sort':
      return !words.some((w) => hasShortFlag(w, 'o') || w.startsWith('--output') || w.startsWith('--compress-program'))
    case 'date':
      return !words.some((w) => hasShortFlag(w, 's') || w.startsWith('--set'))
    case 'file':
      return !words.some((w) => hasShortFlag(w, 'C') || w === '--compile')
    case 'uniq':
      return uniqWritesNoFile(words)
    default:
      return true
  }
}

/** `uniq IN OUT` writes OUT, so more than one operand is not read-only. */
function uniqWritesNoFile (words: string[]): boolean {
  let operands = 0
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string
    if (['-f', '-s', '-w'].includes(w)) i++
    else if (w === '-' || !w.startsWith('-')) operands++
  }
  return operands <= 1
}

function isLowRisk (command: string): boolean {
  if (NOT_LOW_RISK_TEXT.test(command)) return false
  const stages = lexPipeline(command)
  if (stages === null) return false
  return stages.every((stage) => {
    const [first, ...args] = stage
    if (first === undefined || !LOW_RISK_COMMANDS.has(first.text)) return false
    return argumentsAreReadOnly(first.text, args)
  })
}

const SYSTEM_PATH = String.raw`/(?:etc|boot|bin|sbin|usr|lib|lib64|sys|proc)(?:/|\s|$)`
const BLOCK_DEVICE = String.raw`/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|mapper|dm-)`
const SHELLS = String.raw`(?:\S*/)?(?:ba|z|da|k|c|tc|fi|a)?sh|python[0-9.]*|perl|ruby|node|php`

const HIGH_RISK_TEXT: readonly RegExp[] = [
  /:\s*\(\s*\)\s*\{/, // the classic fork bomb
  /\b(\w+)\s*\(\s*\)\s*\{[^}]*\b\1\s*\|\s*\1\b/, // fork bomb under another name
  new RegExp(String.raw`>[|&]?\s*${SYSTEM_PATH}`),
  new RegExp(String.raw`\btee\b(?:\s+-\S+)*\s+${SYSTEM_PATH}`),
  new RegExp(String.raw`(?:>[|&]?|\btee\b[^|;&]*)\s*${BLOCK_DEVICE}`),
  new RegExp(String.raw`\b(?:curl|wget|fetch)\b[^;&]*\|\s*(?:sudo\s+)?(?:${SHELLS})\b`),
  new RegExp(String.raw`\b(?:${SHELLS})\b[^;&|]*(?:\$\(|\x60|<\()\s*(?:curl|wget)\b`),
  /\beval\b[^;&|]*(?:\$\(|`)\s*(?:curl|wget)\b/,
  /\/dev\/(?:tcp|udp)\//,
  /--no-preserve-root\b/
]

const ESCALATION_COMMANDS = new Set(['sudo', 'su', 'doas', 'pkexec'])
const POWER_COMMANDS = new Set(['shutdown', 'reboot', 'halt', 'poweroff'])
const FILESYSTEM_WIPERS = new Set(['mke2fs', 'wipefs'])
const NETCAT_COMMANDS = new Set(['nc', 'ncat', 'netcat'])

// Commands that run the command named in their arguments (`sh -c "rm -rf /"`, `xargs rm`, `nice -n 5 dd`).
const WRAPPER_COMMANDS = new Set([
  'sh', 'bash', 'zsh', 'dash', 'ksh', 'fish', 'busybox', 'env', 'xargs', 'nice', 'ionice', 'nohup', 'time',
  'timeout', 'stdbuf', 'setsid', 'command', 'builtin', 'exec', 'eval', 'watch', 'strace', 'flock', 'then',
  'do', 'else', 'if', 'while', 'until', '!'
])
const FIND_EXEC_OPTIONS = new Set(['-exec', '-execdir', '-ok', '-okdir'])

function isRecursiveFlag (w: string): boolean {
  return w === '--recursive' || /^-[A-Za-z]*[rR][A-Za-z]*$/.test(w)
}

/** Absolute, home or parent-directory targets reach beyond the workspace. */
function isOutsideTarget (w: string): boolean {
  return w.startsWith('/') || w.startsWith('~') || w.startsWith('$HOME') || w === '..' || w.startsWith('../')
}

function isHighRiskInvocation (name: string, args: string[]): boolean {
  if (ESCALATION_COMMANDS.has(name) || POWER_COMMANDS.has(name) || FILESYSTEM_WIPERS.has(name)) return true
  if (name.startsWith('mkfs')) return true
  switch (name) {
    case 'rm':
      return args.some(isRecursiveFlag) && args.some(isOutsideTarget)
    case 'chmod':
      return (args.some(isRecursiveFlag) && args.some(isOutsideTarget)) || args.some((w) => /^[ugoa]*\+[rwxXt]*s/.test(w))
    case 'chown':
    case 'chgrp':
      return args.some(isRecursiveFlag)
    case 'dd':
      return args.some((w) => w.startsWith('of='))
    case 'kill':
      // `-1` as a target (not as the signal in first position) signals every process.
      return args.slice(1).includes('-1')
    case 'init':
    case 'telinit':
      return args.some((w) => w === '0' || w === '6')
    case 'systemctl':
      return args.some((w) => POWER_COMMANDS.has(w) || w === 'kexec')
    case 'socat':
      return args.some((w) => /^(?:exec|system|tcp[46]?-listen):/i.test(w))
    default:
      return NETCAT_COMMANDS.has(name) && args.some((w) => /^-[A-Za-z]*[lec]/.test(w) || /^--(?:listen|exec|sh-exec|lua-exec)/.test(w))
  }
}

function basename (word: string): string {
  const slash = word.lastIndexOf('/')
  return slash === -1 ? word : word.slice(slash + 1)
}

interface Invocation {
  name: string
  args: string[]
}

/** The words of a segment that are in command position, each with the words after it. */
function invocations (words: string[]): Invocation[] {
  const found: Invocation[] = []
  let expectCommand = true
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string
    if (expectCommand) {
      // Options, assignments and counts or durations sit between a wrapper and the command it runs.
      if (w.startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w) || /^\d+(?:\.\d+)?[smhd]?$/.test(w)) continue
      const name = basename(w)
      found.push({ name, args: words.slice(i + 1) })
      expectCommand = WRAPPER_COMMANDS.has(name)
    } else if (FIND_EXEC_OPTIONS.has(w)) {
      expectCommand = true
    }
  }
  return found
}

function isHighRisk (command: string): boolean {
  // `${HOME}` becomes `$HOME` so the brace split below does not tear the variable apart.
  const unquoted = command.replace(/['"\\]/g, '').replace(/\$\{(\w+)\}/g, '$$$1')
  if (HIGH_RISK_TEXT.some((pattern) => pattern.test(unquoted))) return true
  return unquoted
    .split(/[;&|\n\r(){}`]|\$\(/)
    .some((segment) => {
      const words = segment.trim().split(/\s+/).filter((w) => w !== '')
      return invocations(words).some(({ name, args }) => isHighRiskInvocation(name, args))
    })
}

export function classifyCommand (command: string): CommandRisk {
  if (isHighRisk(command)) return 'high'
  if (isLowRisk(command.trim())) return 'low'
  return 'medium'
}
