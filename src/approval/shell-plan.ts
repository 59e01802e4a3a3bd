/**
 * A shell command read as a plan: the simple commands it would run, after wrappers are peeled
 * off, and the hazards that make it impossible to say from the text alone what would run
 * (substitutions, eval, variable-built names, redirection to files, anything unparseable).
 * Permission rules decide on the plan, never on the string (decision 0211).
 */
import type { ShellSyntax, SyntaxNode } from './shell-parser.js'

/** A word after quote removal; null when its value is only known at run time (`$X`, `$'…'`, `{a,b}`). */
export type PlanWord = string | null

export interface PlannedCommand {
  words: PlanWord[]
  /** The command as shown to people: its words, quoted where needed, `…` for a run-time value. */
  text: string
  /** Wrappers peeled off to reach it, outermost first (`env`, `sh -c`, …). */
  wrappers: string[]
}

export type HazardKind =
  | 'unparseable' | 'substitution' | 'eval' | 'source' | 'dynamic_name' | 'glob_name'
  | 'redirect' | 'environment' | 'unsupported' | 'dynamic_script'

export interface PlanHazard {
  kind: HazardKind
  /** The part of the command that carries it. */
  text: string
}

export interface ShellPlan {
  commands: PlannedCommand[]
  hazards: PlanHazard[]
}

export const HAZARD_REASONS: Record<HazardKind, string> = {
  unparseable: 'the command cannot be read with certainty',
  substitution: 'command or process substitution runs a command the rules cannot see',
  eval: 'eval runs text the rules cannot see',
  source: 'source runs a file the rules cannot see',
  dynamic_name: 'the command name is built at run time',
  glob_name: 'the command name is a pattern the shell expands',
  redirect: 'output is redirected to a file',
  environment: 'the command changes what the shell runs (PATH, LD_PRELOAD, IFS, …)',
  unsupported: 'a shell construct the rules do not decide on',
  dynamic_script: 'a shell is given a script built at run time'
}

/** Variables that change which program runs or how the shell reads words. */
const PROGRAM_CHANGING_ENV = /^(PATH|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|GLOBIGNORE|LD_[A-Z_]+|BASH_FUNC_.*|DYLD_[A-Z_]+)$/
const MAX_SCRIPT_DEPTH = 4
const UNPARSED_SUBSTITUTION_NODES = new Set(['word', 'string_content', 'expansion', 'heredoc_body', 'heredoc_content'])
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'mksh'])

interface Word {
  value: PlanWord
  /** Unquoted characters the shell would expand as a pattern (`*`, `?`, `[`, `{`, a leading `~`). */
  pattern: boolean
}

class PlanBuilder {
  readonly commands: PlannedCommand[] = []
  readonly hazards: PlanHazard[] = []

  constructor (private readonly syntax: ShellSyntax) {}

  hazard (kind: HazardKind, text: string): void {
    if (!this.hazards.some((h) => h.kind === kind && h.text === text)) this.hazards.push({ kind, text: text.slice(0, 200) })
  }

  script (source: string, wrappers: string[], depth: number): void {
    const read = this.syntax.read(source, (root, hasError) => {
      if (hasError) this.hazard('unparseable', source)
      for (const substitution of scanHazards(root, this)) {
        // What a substitution runs is planned too, so a deny rule still names it.
        for (const child of substitution.namedChildren) {
          if (child !== null) this.statement(child, [...wrappers, substitution.type === 'process_substitution' ? '<(…)' : '$(…)'], depth)
        }
      }
      this.statement(root, wrappers, depth)
      return true
    })
    if (read === null) this.hazard('unparseable', source)
  }

  private statement (node: SyntaxNode, wrappers: string[], depth: number): void {
    switch (node.type) {
      case 'program': case 'list': case 'pipeline': case 'subshell': case 'compound_statement':
      case 'negated_command': case 'redirected_statement':
        for (const child of node.namedChildren) {
          if (child !== null) this.statement(child, wrappers, depth)
        }
        return
      case 'command':
        this.simpleCommand(node, wrappers, depth)
        return
      // Redirections and substitutions are judged by scanHazards; comments run nothing.
      case 'file_redirect': case 'heredoc_redirect': case 'herestring_redirect': case 'comment':
        return
      case 'ERROR':
        this.hazard('unparseable', node.text)
        return
      default:
        this.hazard('unsupported', node.text)
    }
  }

  private simpleCommand (node: SyntaxNode, wrappers: string[], depth: number): void {
    for (const child of node.namedChildren) {
      if (child?.type === 'variable_assignment') this.assignment(child.childForFieldName('name')?.text ?? '', child.text)
    }
    const name = node.childForFieldName('name')
    if (name === null) return
    const words = [wordOf(name.namedChildren[0] ?? name), ...node.childrenForFieldName('argument').flatMap((n) => (n === null ? [] : [wordOf(n)]))]
    this.run(words, wrappers, depth, node.text)
  }

  private assignment (name: string, text: string): void {
    if (PROGRAM_CHANGING_ENV.test(name)) this.hazard('environment', text)
  }

  /** One simple command's words: a wrapper is peeled off and what it runs planned in turn. */
  private run (words: Word[], wrappers: string[], depth: number, source?: string): void {
    const first = words[0] as Word
    const shown = commandText(words.map((w) => w.value))
    if (first.value === null) {
      this.hazard('dynamic_name', source ?? shown)
      this.commands.push({ words: words.map((w) => w.value), text: shown, wrappers })
      return
    }
    if (first.pattern) this.hazard('glob_name', shown)
    const base = baseName(first.value)
    if (base === 'eval') this.hazard('eval', shown)
    if (base === 'source' || base === '.') this.hazard('source', shown)
    const inner = unwrap(base, words, this)
    if (inner === undefined) {
      this.commands.push({ words: words.map((w) => w.value), text: shown, wrappers })
      return
    }
    if (inner.script !== undefined) {
      if (inner.script.value === null) this.hazard('dynamic_script', shown)
      else if (depth >= MAX_SCRIPT_DEPTH) this.hazard('unparseable', shown)
      else this.script(inner.script.value, [...wrappers, `${base} -c`], depth + 1)
      return
    }
    if (inner.words.length === 0) {
      this.commands.push({ words: words.map((w) => w.value), text: shown, wrappers })
      return
    }
    this.run(inner.words, [...wrappers, base], depth)
  }
}

/** What a wrapper runs: more words, a script for a shell, or nothing (the wrapper alone). */
interface Unwrapped {
  words: Word[]
  script?: Word
}

interface WrapperOptions {
  /** Options that take the next word as their value. */
  withValue: ReadonlySet<string>
  /** Options that take no value. */
  flags: ReadonlySet<string>
  /** Options after which the rules cannot tell what runs. */
  opaque?: ReadonlySet<string>
  /** Positional words before the command (timeout's duration). */
  positional?: number
  /** `NAME=value` words before the command (env). */
  assignments?: boolean
}

const set = (...items: string[]): ReadonlySet<string> => new Set(items)

const WRAPPERS: Record<string, WrapperOptions> = {
  env: { withValue: set('-u', '--unset', '-C', '--chdir'), flags: set('-i', '-0', '-v', '--ignore-environment', '--null', '--debug', '-'), opaque: set('-S', '--split-string'), assignments: true },
  command: { withValue: set(), flags: set('-p') },
  builtin: { withValue: set(), flags: set() },
  exec: { withValue: set('-a'), flags: set('-c', '-l') },
  nohup: { withValue: set(), flags: set() },
  setsid: { withValue: set(), flags: set('-f', '-w', '-c', '--fork', '--wait', '--ctty') },
  time: { withValue: set(), flags: set('-p') },
  nice: { withValue: set('-n', '--adjustment'), flags: set() },
  ionice: { withValue: set('-c', '-n', '--class', '--classdata'), flags: set('-t', '--ignore') },
  stdbuf: { withValue: set('-i', '-o', '-e', '--input', '--output', '--error'), flags: set() },
  timeout: { withValue: set('-s', '-k', '--signal', '--kill-after'), flags: set('--foreground', '--preserve-status', '-v', '--verbose'), positional: 1 },
  xargs: {
    withValue: set('-I', '-n', '-L', '-P', '-d', '-E', '-s', '-a', '--max-args', '--max-lines', '--max-procs', '--delimiter', '--eof', '--max-chars', '--arg-file', '--replace'),
    flags: set('-0', '-r', '-t', '-x', '-p', '-i', '--null', '--no-run-if-empty', '--verbose', '--exit', '--interactive', '--open-tty', '-o')
  },
  sudo: {
    withValue: set('-u', '-g', '-h', '-p', '-C', '-D', '-r', '-t', '-U', '-T', '--user', '--group', '--host', '--prompt', '--chdir'),
    flags: set('-n', '-E', '-H', '-P', '-S', '-k', '-b', '-A', '--non-interactive', '--preserve-env', '--set-home'),
    opaque: set('-i', '-s', '-e', '--login', '--shell', '--edit')
  },
  doas: { withValue: set('-u', '-C'), flags: set('-n'), opaque: set('-s') }
}

/** The command a wrapper runs; undefined when `base` is no wrapper (or `command -v`, which only looks up). */
function unwrap (base: string, words: Word[], plan: PlanBuilder): Unwrapped | undefined {
  if (SHELLS.has(base)) return unwrapShell(words, plan)
  const spec = WRAPPERS[base]
  if (spec === undefined) return undefined
  if (base === 'command' && words.slice(1).some((w) => w.value !== null && /^-[a-zA-Z]*[vV]/.test(w.value))) return undefined
  let i = 1
  let replace: string | null = null
  while (i < words.length) {
    const value = (words[i] as Word).value
    if (value === null) {
      plan.hazard('dynamic_name', commandText(words.map((w) => w.value)))
      return { words: [] }
    }
    if (value === '--') {
      i++
      break
    }
    if (!value.startsWith('-') || (value === '-' && base !== 'env')) break
    const [option, attached] = splitOption(value)
    if (spec.opaque?.has(option) === true) {
      plan.hazard('unsupported', commandText(words.map((w) => w.value)))
      return { words: [] }
    }
    if (spec.withValue.has(option)) {
      const optionValue = attached ?? (words[i + 1] as Word | undefined)?.value ?? null
      if (base === 'xargs' && (option === '-I' || option === '--replace')) replace = optionValue ?? '{}'
      i += attached === undefined ? 2 : 1
    } else if (spec.flags.has(option) || (base === 'nice' && /^-\d+$/.test(option))) {
      if (base === 'xargs' && option === '-i') replace = '{}'
      i++
    } else {
      // An option the plan does not know may take a value that it would mistake for the command.
      plan.hazard('unsupported', commandText(words.map((w) => w.value)))
      return { words: [] }
    }
  }
  if (spec.assignments === true) {
    while (i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test((words[i] as Word).value ?? '')) {
      const assignment = (words[i] as Word).value as string
      if (PROGRAM_CHANGING_ENV.test(assignment.slice(0, assignment.indexOf('=')))) plan.hazard('environment', assignment)
      i++
    }
  }
  i += spec.positional ?? 0
  let inner = words.slice(i)
  if (base === 'xargs') {
    // xargs appends its input as arguments, or puts it where the replace string stands.
    if (inner.length === 0) inner = [{ value: 'echo', pattern: false }]
    inner = replace === null
      ? [...inner, { value: null, pattern: false }]
      : inner.map((w) => (w.value !== null && w.value.includes(replace as string) ? { value: null, pattern: false } : w))
  }
  return { words: inner }
}

/** `sh -c 'script'` gives its script to be planned; `sh file` (or stdin) is a command of its own. */
function unwrapShell (words: Word[], plan: PlanBuilder): Unwrapped | undefined {
  let dashC = false
  let i = 1
  for (; i < words.length; i++) {
    const value = (words[i] as Word).value
    if (value === null) {
      plan.hazard('dynamic_script', commandText(words.map((w) => w.value)))
      return { words: [] }
    }
    if (value === '--') {
      i++
      break
    }
    if (!/^[-+]/.test(value)) break
    if (value === '-o' || value === '+o' || value === '-O' || value === '+O') {
      i++
      continue
    }
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(value)) dashC = true
  }
  if (!dashC) return undefined
  const script = words[i]
  if (script === undefined) return { words: [] }
  return { words: [], script }
}

function splitOption (value: string): [string, string | undefined] {
  if (value.startsWith('--')) {
    const eq = value.indexOf('=')
    return eq === -1 ? [value, undefined] : [value.slice(0, eq), value.slice(eq + 1)]
  }
  // A short option with its value attached (`-n10`, `-uroot`).
  return value.length > 2 ? [value.slice(0, 2), value.slice(2)] : [value, undefined]
}

function baseName (name: string): string {
  const slash = name.lastIndexOf('/')
  return slash === -1 ? name : name.slice(slash + 1)
}

/**
 * Substitutions anywhere (arguments, assignments, strings, here-documents) and redirections to
 * files become hazards; the substitutions are returned so what they run can be planned.
 */
function scanHazards (root: SyntaxNode, plan: PlanBuilder): SyntaxNode[] {
  const substitutions: SyntaxNode[] = []
  const stack: SyntaxNode[] = [root]
  while (stack.length > 0) {
    const node = stack.pop() as SyntaxNode
    if (node.type === 'command_substitution' || node.type === 'process_substitution') {
      plan.hazard('substitution', node.text)
      substitutions.push(node)
    }
    // The grammar reads some substitutions as plain text (a backquote inside `${…}`): text that
    // could start one is a substitution all the same.
    if (UNPARSED_SUBSTITUTION_NODES.has(node.type) && /`|\$\(|[<>]\(/.test(node.text)) plan.hazard('substitution', node.text)
    if (node.type === 'file_redirect' && writesFile(node)) plan.hazard('redirect', node.text)
    if (node.isMissing) plan.hazard('unparseable', node.parent?.text ?? node.text)
    for (const child of node.children) {
      if (child !== null) stack.push(child)
    }
  }
  return substitutions
}

/** A redirection that writes a file: any output redirection except to /dev/null or to another descriptor. */
function writesFile (node: SyntaxNode): boolean {
  const operator = node.children.find((c) => c !== null && !c.isNamed)?.type ?? ''
  const destination = node.childForFieldName('destination') ?? node.namedChildren.at(-1) ?? null
  if (operator === '<' || operator === '<<<') return false
  if ((operator === '>&' || operator === '<&') && destination !== null && /^(\d+|-)$/.test(destination.text)) return false
  if (operator === '<&' || operator === '<&-' || operator === '>&-') return false
  if (destination !== null && destination.type === 'word' && destination.text === '/dev/null') return false
  return true
}

/** A syntax node as a shell word after quote removal, when it is literal. */
function wordOf (node: SyntaxNode): Word {
  switch (node.type) {
    case 'word':
      return unquotedWord(node.text)
    case 'number':
      return { value: node.text, pattern: false }
    case 'raw_string':
      return { value: node.text.slice(1, -1), pattern: false }
    case 'string': {
      let value = ''
      for (const child of node.namedChildren) {
        if (child?.type !== 'string_content') return { value: null, pattern: false }
        value += child.text.replace(/\\([\\"$`])/g, '$1').replace(/\\\n/g, '')
      }
      return { value, pattern: false }
    }
    case 'concatenation': {
      let value = ''
      let pattern = false
      for (const child of node.namedChildren) {
        if (child === null) continue
        const part = wordOf(child)
        if (part.value === null) return { value: null, pattern: false }
        value += part.value
        pattern ||= part.pattern
      }
      // Brace expansion splits into words the shell builds: `{rm,-rf,x}`.
      if (/[{}]/.test(node.text) && node.text.includes(',')) pattern = true
      return { value, pattern }
    }
    default:
      return { value: null, pattern: false }
  }
}

/** An unquoted word: backslashes escape the next character, a backslash-newline joins lines. */
function unquotedWord (text: string): Word {
  let value = ''
  let pattern = text.startsWith('~')
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string
    if (ch === '\\') {
      const next = text[++i]
      if (next !== undefined && next !== '\n') value += next
      continue
    }
    if ('*?[{'.includes(ch)) pattern = true
    value += ch
  }
  return { value, pattern }
}

/** Words shown the way a person would type them back. */
export function commandText (words: readonly PlanWord[]): string {
  return words.map((w) => (w === null ? '…' : /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, "'\\''")}'`)).join(' ')
}

export function planShellCommand (syntax: ShellSyntax, command: string): ShellPlan {
  const plan = new PlanBuilder(syntax)
  plan.script(command, [], 0)
  if (plan.commands.length === 0 && plan.hazards.length === 0 && command.trim() !== '') plan.hazard('unsupported', command)
  return { commands: plan.commands, hazards: plan.hazards }
}
