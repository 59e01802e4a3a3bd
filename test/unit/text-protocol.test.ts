import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  buildToolProtocolInstructions,
  detectToolProtocolIssue,
  mapToolNameAlias,
  mayHoldToolProtocol,
  parseTextToolCalls,
  stripTerminalMarkers,
  stripThinkBlocks,
  stripToolResultBlocks
} from '../../src/turn/text-protocol/index.js'

const KNOWN = new Set(['shell', 'file_read', 'file_write', 'http_request', 'date'])

function tagged (name: string, args: Record<string, unknown>): string {
  return `<tool_call>${JSON.stringify({ name, arguments: args })}</tool_call>`
}

// a. think blocks and terminal markers

test('think blocks are removed before a tool call is parsed', () => {
  const result = parseTextToolCalls(`<think>I should list files</think>\n${tagged('shell', { command: 'ls' })}`)
  assert.deepEqual(result.calls.map((call) => call.name), ['shell'])
  assert.equal(result.text, '')
})

test('a tool call inside a think block is not executed', () => {
  const result = parseTextToolCalls(`<think>maybe ${tagged('shell', { command: 'rm -rf /' })}</think>Nothing to do.`)
  assert.deepEqual(result.calls, [])
  assert.equal(result.text, 'Nothing to do.')
})

test('a reply that is only thinking parses to empty text and no calls', () => {
  assert.deepEqual(parseTextToolCalls('<think>just pondering</think>'), { text: '', calls: [] })
})

test('several qwen-style think blocks around multiple calls are all stripped', () => {
  const response = `<think>first</think>${tagged('shell', { command: 'pwd' })}<think>second</think>${tagged('date', {})}`
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.name), ['shell', 'date'])
})

test('an unclosed leading think swallows the rest of the reply', () => {
  assert.equal(stripThinkBlocks(`<think>still reasoning ${tagged('shell', { command: 'ls' })}`), '')
})

test('block patterns are shared between calls: each call starts from the beginning of its own text, in any case', () => {
  const long = `${'x'.repeat(200)}<think>a</think>tail`
  assert.equal(stripThinkBlocks(long), `${'x'.repeat(200)}tail`)
  // The shared pattern's position was left past character 200 by the call above.
  assert.equal(stripThinkBlocks('<THINK>b</Think>c'), 'c')
  assert.equal(stripThinkBlocks('no block here'), 'no block here')
  assert.equal(stripToolResultBlocks('<TOOL_RESULT>r</tool_result>d'), 'd')
})

test('text before an unclosed think is kept', () => {
  assert.equal(stripThinkBlocks('Answer first. <think>then reasoning'), 'Answer first. ')
})

test('trailing terminal markers are stripped repeatedly, with the whitespace after them', () => {
  assert.equal(stripTerminalMarkers('Summary<eom>'), 'Summary')
  assert.equal(stripTerminalMarkers('Summary<|eom|>'), 'Summary')
  assert.equal(stripTerminalMarkers('Summary<eom>  <|eom|>\n'), 'Summary')
})

test('inline terminal markers and whitespace before a marker are preserved', () => {
  assert.equal(stripTerminalMarkers('Text with <eom> inline'), 'Text with <eom> inline')
  assert.equal(stripTerminalMarkers('Answer\n<eom>'), 'Answer\n')
})

test('a terminal marker after a tool call does not leak into visible text', () => {
  const result = parseTextToolCalls(`Checking. ${tagged('date', {})} <eom>`)
  assert.equal(result.text, 'Checking.')
  assert.equal(result.calls.length, 1)
})

// b. whole-response JSON

test('an OpenAI-style tool_calls envelope yields calls with their ids and content as text', () => {
  const response = JSON.stringify({
    content: 'Let me look.',
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"command":"ls"}' } },
      { id: 'call_2', type: 'function', function: { name: 'file_read', arguments: '{"path":"a.txt"}' } }
    ]
  })
  const result = parseTextToolCalls(response)
  assert.equal(result.text, 'Let me look.')
  assert.deepEqual(result.calls, [
    { name: 'shell', arguments: { command: 'ls' }, id: 'call_1' },
    { name: 'file_read', arguments: { path: 'a.txt' }, id: 'call_2' }
  ])
})

test('a tool_calls envelope without content yields empty text', () => {
  const result = parseTextToolCalls('{"tool_calls":[{"name":"date","arguments":{}}]}')
  assert.equal(result.text, '')
  assert.deepEqual(result.calls, [{ name: 'date', arguments: {}, id: null }])
})

test('a top-level array of call objects yields every call', () => {
  const response = '[{"name":"shell","arguments":{"command":"pwd"}},{"name":"date","arguments":{}}]'
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.name), ['shell', 'date'])
})

test('a single whole-response call object is a call', () => {
  const result = parseTextToolCalls('{"name":"shell","arguments":{"command":"uname -a"}}')
  assert.deepEqual(result.calls, [{ name: 'shell', arguments: { command: 'uname -a' }, id: null }])
})

test('whole-response JSON that is not call-shaped stays text', () => {
  const response = '{"name":"Alice","age":31}'
  assert.deepEqual(parseTextToolCalls(response), { text: response, calls: [] })
})

test('an empty tool_calls array leaves the whole JSON as text', () => {
  const response = '{"content":"Hello","tool_calls":[]}'
  assert.deepEqual(parseTextToolCalls(response), { text: response, calls: [] })
})

// c. tag loop

test('multiple tagged calls are extracted in order', () => {
  const response = `${tagged('shell', { command: 'ls' })}\n${tagged('file_read', { path: 'README.md' })}`
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.name), ['shell', 'file_read'])
})

test('text before and after a tag is visible text joined by newlines', () => {
  const result = parseTextToolCalls(`Let me check.\n${tagged('shell', { command: 'ls' })}\nDone checking.`)
  assert.equal(result.text, 'Let me check.\nDone checking.')
  assert.equal(result.calls.length, 1)
})

test('a reply without any call is returned as trimmed text', () => {
  assert.deepEqual(parseTextToolCalls('  Just a plain answer.  '), { text: 'Just a plain answer.', calls: [] })
})

test('a markdown json fence inside a tag body is tolerated', () => {
  const response = '<tool_call>\n```json\n{"name":"shell","arguments":{"command":"ls"}}\n```\n</tool_call>'
  assert.deepEqual(parseTextToolCalls(response).calls, [{ name: 'shell', arguments: { command: 'ls' }, id: null }])
})

test('noise around the JSON inside a tag body is ignored', () => {
  const response = '<tool_call>I will run this: {"name":"date","arguments":{}} right away</tool_call>'
  const result = parseTextToolCalls(response)
  assert.deepEqual(result.calls.map((call) => call.name), ['date'])
  assert.equal(result.text, '')
})

test('several JSON objects in one tag body each become a call', () => {
  const response = '<tool_call>{"name":"shell","arguments":{"command":"a"}}\n{"name":"shell","arguments":{"command":"b"}}</tool_call>'
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.arguments.command), ['a', 'b'])
})

test('a JSON array in a tag body becomes several calls', () => {
  const response = '<tool_call>[{"name":"date","arguments":{}},{"name":"shell","arguments":{"command":"id"}}]</tool_call>'
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.name), ['date', 'shell'])
})

test('a plural tool_calls wrapper with nested tags yields every call', () => {
  const response = `<tool_calls>\n${tagged('shell', { command: 'ls' })}\n${tagged('date', {})}\n</tool_calls>`
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.name), ['shell', 'date'])
})

test('the toolcall, tool-call and invoke tag aliases are accepted', () => {
  const response = '<toolcall>{"name":"date","arguments":{}}</toolcall>' +
    '<tool-call>{"name":"shell","arguments":{"command":"ls"}}</tool-call>' +
    '<invoke>{"name":"file_read","arguments":{"path":"x"}}</invoke>'
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.name), ['date', 'shell', 'file_read'])
})

test('an unclosed tag followed by balanced JSON is recovered and the text after it kept', () => {
  const result = parseTextToolCalls('Running now <tool_call>{"name":"shell","arguments":{"command":"ls"}} and that is all')
  assert.deepEqual(result.calls.map((call) => call.name), ['shell'])
  assert.equal(result.text, 'Running now\nand that is all')
})

test('a mismatched alias close tag still closes the body', () => {
  const result = parseTextToolCalls('<tool_call>{"name":"shell","arguments":{"command":"ls"}}</invoke> after')
  assert.deepEqual(result.calls.map((call) => call.name), ['shell'])
  assert.equal(result.text, 'after')
})

test('an unclosed tag without JSON stops the loop and keeps the rest as text', () => {
  const response = 'I could use <tool_call> here but will not.'
  assert.deepEqual(parseTextToolCalls(response), { text: response, calls: [] })
})

test('a malformed tag body yields no calls and keeps the reply as text', () => {
  const response = '<tool_call>{"name":"shell","arguments":{"command":"pwd"}</tool_call>'
  assert.deepEqual(parseTextToolCalls(response), { text: response, calls: [] })
})

// d. fenced formats

test('a tool_call fence is parsed', () => {
  const response = 'Sure.\n```tool_call\n{"name":"shell","arguments":{"command":"ls"}}\n```'
  const result = parseTextToolCalls(response)
  assert.deepEqual(result.calls.map((call) => call.name), ['shell'])
  assert.equal(result.text, 'Sure.')
})

test('a tool_call fence closed by a closing tag is parsed', () => {
  const response = '```tool_call\n{"name":"date","arguments":{}}\n</tool_call>'
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.name), ['date'])
})

test('an invoke fence is parsed', () => {
  const response = '```invoke\n{"name":"file_read","arguments":{"path":"a"}}\n```'
  assert.deepEqual(parseTextToolCalls(response).calls, [{ name: 'file_read', arguments: { path: 'a' }, id: null }])
})

test('a tool-name fence takes its body as the JSON arguments', () => {
  const response = '```tool shell\n{"command":"uname -a"}\n```'
  assert.deepEqual(parseTextToolCalls(response).calls, [{ name: 'shell', arguments: { command: 'uname -a' }, id: null }])
})

test('multiple tool-name fences each become a call', () => {
  const response = '```tool file_read\n{"path":"a"}\n```\nthen\n```tool bash\n{"command":"ls"}\n```'
  const result = parseTextToolCalls(response)
  assert.deepEqual(result.calls.map((call) => call.name), ['file_read', 'shell'])
  assert.equal(result.text, 'then')
})

test('fences are ignored when tags already produced calls', () => {
  const response = `${tagged('date', {})}\n\`\`\`tool shell\n{"command":"ls"}\n\`\`\``
  const result = parseTextToolCalls(response)
  assert.deepEqual(result.calls.map((call) => call.name), ['date'])
  assert.match(result.text, /```tool shell/)
})

// e. prose-embedded JSON

test('raw call JSON embedded in prose is never a call', () => {
  const response = 'Here is data: {"name":"shell","arguments":{}}'
  assert.deepEqual(parseTextToolCalls(response), { text: response, calls: [] })
})

test('a json markdown fence with a call object is not executed', () => {
  const response = 'The payload:\n```json\n{"name":"shell","arguments":{"command":"ls"}}\n```'
  assert.deepEqual(parseTextToolCalls(response).calls, [])
})

// f. example guard

test('a tagged call presented as an example is not executed', () => {
  const response = `For example:\n${tagged('shell', { command: 'ls' })}`
  assert.deepEqual(parseTextToolCalls(response), { text: response, calls: [] })
})

test('a fenced call presented as a sample is not executed', () => {
  const response = 'Sample usage:\n```tool_call\n{"name":"shell","arguments":{"command":"ls"}}\n```'
  assert.deepEqual(parseTextToolCalls(response), { text: response, calls: [] })
})

test('Chinese example wording also withholds the call', () => {
  for (const phrase of ['示例', '例如', '比如', '举例', '例子', '比方说', '譬如']) {
    assert.deepEqual(parseTextToolCalls(`${phrase}：${tagged('shell', { command: 'ls' })}`).calls, [], phrase)
  }
})

test('the example guard is case-insensitive', () => {
  assert.deepEqual(parseTextToolCalls(`EXAMPLE ${tagged('date', {})}`).calls, [])
})

// g. call normalisation

test('double-encoded string arguments are decoded', () => {
  const response = `<tool_call>${JSON.stringify({ name: 'shell', arguments: JSON.stringify(JSON.stringify({ command: 'ls' })) })}</tool_call>`
  assert.deepEqual(parseTextToolCalls(response).calls[0]?.arguments, { command: 'ls' })
})

test('string values inside the arguments stay strings even when they hold JSON', () => {
  const args = { path: 'config.json', content: '{"recursive":true}', paths: '["a","b"]', note: '{not json' }
  const call = parseTextToolCalls(tagged('file_write', args)).calls[0]
  assert.deepEqual(call?.arguments, args)
})

test('a parameters key is accepted in place of arguments, at the top level and in function', () => {
  const top = parseTextToolCalls('<tool_call>{"name":"shell","parameters":{"command":"ls"}}</tool_call>').calls[0]
  const nested = parseTextToolCalls('<tool_call>{"function":{"name":"shell","parameters":{"command":"pwd"}}}</tool_call>').calls[0]
  assert.deepEqual(top?.arguments, { command: 'ls' })
  assert.deepEqual(nested?.arguments, { command: 'pwd' })
})

test('function-level arguments win over top-level ones', () => {
  const response = '<tool_call>{"arguments":{"command":"outer"},"function":{"name":"shell","arguments":{"command":"inner"}}}</tool_call>'
  assert.deepEqual(parseTextToolCalls(response).calls[0]?.arguments, { command: 'inner' })
})

test('missing arguments become an empty object', () => {
  assert.deepEqual(parseTextToolCalls('<tool_call>{"name":"date"}</tool_call>').calls, [{ name: 'date', arguments: {}, id: null }])
})

test('string arguments that are not JSON record an argumentsError instead of silently using {}', () => {
  const call = parseTextToolCalls('<tool_call>{"name":"shell","arguments":"ls -la"}</tool_call>').calls[0]
  assert.equal(call?.name, 'shell')
  assert.deepEqual(call?.arguments, {})
  assert.match(call?.argumentsError ?? '', /^arguments are not valid JSON: /)
})

test('non-object arguments record that arguments must be a JSON object', () => {
  const numeric = parseTextToolCalls('<tool_call>{"name":"shell","arguments":42}</tool_call>').calls[0]
  const listed = parseTextToolCalls('<tool_call>{"name":"shell","arguments":"[1,2]"}</tool_call>').calls[0]
  assert.equal(numeric?.argumentsError, 'arguments must be a JSON object')
  assert.equal(listed?.argumentsError, 'arguments must be a JSON object')
  assert.deepEqual(numeric?.arguments, {})
})

test('call ids are read from function.id, id, tool_call_id and call_id, trimmed', () => {
  const response = '<tool_call>[' +
    '{"function":{"id":" fn-1 ","name":"date"},"id":"outer"},' +
    '{"id":"id-2","name":"date"},' +
    '{"tool_call_id":"tc-3","name":"date"},' +
    '{"call_id":"c-4","name":"date"},' +
    '{"id":"   ","name":"date"}' +
    ']</tool_call>'
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.id), ['fn-1', 'id-2', 'tc-3', 'c-4', null])
})

test('names are trimmed and a blank name is not a call', () => {
  const response = '<tool_call>[{"name":"  date  ","arguments":{}},{"name":"   ","arguments":{}}]</tool_call>'
  assert.deepEqual(parseTextToolCalls(response).calls.map((call) => call.name), ['date'])
})

// h. name aliases

test('shell, file and http aliases map to the built-in tool names', () => {
  const expected: Record<string, string> = {
    bash: 'shell', sh: 'shell', exec: 'shell', command: 'shell', cmd: 'shell',
    fileread: 'file_read', readfile: 'file_read', read_file: 'file_read', file: 'file_read',
    filewrite: 'file_write', writefile: 'file_write', write_file: 'file_write',
    http: 'http_request', fetch: 'http_request', curl: 'http_request', wget: 'http_request'
  }
  for (const [alias, name] of Object.entries(expected)) assert.equal(mapToolNameAlias(alias), name, alias)
})

test('aliases match case-insensitively after stripping dotted namespaces', () => {
  assert.equal(mapToolNameAlias('functions.Bash'), 'shell')
  assert.equal(mapToolNameAlias('default_api.read_file'), 'file_read')
  assert.equal(mapToolNameAlias('tools.my_tool'), 'my_tool')
})

test('browser and web_search are deliberately not mapped to shell', () => {
  assert.equal(mapToolNameAlias('browser'), 'browser')
  assert.equal(mapToolNameAlias('web_search'), 'web_search')
  assert.equal(mapToolNameAlias('browser_open'), 'browser_open')
})

test('text-parsed call names go through the alias map', () => {
  const response = '<tool_call>{"name":"functions.bash","arguments":{"command":"ls"}}</tool_call>'
  assert.equal(parseTextToolCalls(response).calls[0]?.name, 'shell')
})

// detectToolProtocolIssue

test('a malformed tagged payload is flagged as a protocol issue', () => {
  assert.equal(detectToolProtocolIssue('<tool_call>{"name":"shell","arguments":{"command":"pwd"}</tool_call>', KNOWN), true)
})

test('a malformed whole-response call envelope naming a known tool is flagged', () => {
  assert.equal(detectToolProtocolIssue('{"name":"shell","arguments":{"command":"ls"}', KNOWN), true)
  assert.equal(detectToolProtocolIssue('{"tool_calls":[{"function":{"name":"x","arguments":"{}"}]', KNOWN), true)
})

test('a tool-name fence for a known tool whose body is not JSON is flagged', () => {
  assert.equal(detectToolProtocolIssue('```tool shell\nls -la\n```', KNOWN), true)
})

test('a json-fenced tool envelope naming a known tool is flagged', () => {
  const response = '```json\n{"tool_calls":[{"type":"function","function":{"name":"shell","arguments":"{}"}}]}\n```'
  assert.equal(detectToolProtocolIssue(response, KNOWN), true)
})

test('a tagged call to a tool that is not available is flagged', () => {
  assert.equal(detectToolProtocolIssue(tagged('delete_database', {}), KNOWN), true)
})

test('a tag payload in another format that names a known tool is flagged', () => {
  const response = '<invoke name="shell">\n<parameter name="command">ls</parameter>\n</invoke>'
  assert.equal(detectToolProtocolIssue(response, KNOWN), true)
})

test('normal prose and prose that mentions the tags are not flagged', () => {
  assert.equal(detectToolProtocolIssue('Thanks, done.', KNOWN), false)
  assert.equal(detectToolProtocolIssue('I wrap calls in <tool_call> tags when I need the shell tool.', KNOWN), false)
  assert.equal(detectToolProtocolIssue('', KNOWN), false)
})

test('a valid call for a known tool is not flagged', () => {
  assert.equal(detectToolProtocolIssue(tagged('shell', { command: 'ls' }), KNOWN), false)
  assert.equal(detectToolProtocolIssue('<tool_call>{"name":"bash","arguments":"oops"}</tool_call>', KNOWN), false)
})

test('examples are not flagged, whether they parse or not', () => {
  assert.equal(detectToolProtocolIssue(`For example:\n${tagged('shell', { command: 'ls' })}`, KNOWN), false)
  assert.equal(detectToolProtocolIssue('For example: <tool_call>{"name":"shell","arguments":{</tool_call>', KNOWN), false)
  assert.equal(detectToolProtocolIssue('Sample:\n```tool_call\n{"name":"shell"\n```', KNOWN), false)
})

test('business JSON that merely mentions tool names is not flagged', () => {
  assert.equal(detectToolProtocolIssue('{"summary":"used the shell tool twice","tools":["shell"],"count":2}', KNOWN), false)
  assert.equal(detectToolProtocolIssue('```json\n{"tool_calls":[{"name":"crm_export","arguments":{}}]}\n```', KNOWN), false)
  assert.equal(detectToolProtocolIssue('{"name":"Alice","role":"admin"}', KNOWN), false)
})

test('call JSON embedded in prose is not flagged', () => {
  assert.equal(detectToolProtocolIssue('Here is data: {"name":"shell","arguments":{}}', KNOWN), false)
})

// stripToolResultBlocks

test('tool_result blocks with attributes are stripped from visible text', () => {
  const input = 'Before\n<tool_result name="shell" status="ok">\nfile.txt\n</tool_result>\n\n\n\nAfter'
  assert.equal(stripToolResultBlocks(input), 'Before\n\nAfter')
})

test('thinking and think blocks are stripped from visible text', () => {
  assert.equal(stripToolResultBlocks('<thinking>plan</thinking>Hello <think>hmm</think>world'), 'Hello world')
})

test('a leading [Tool results] line is stripped', () => {
  assert.equal(stripToolResultBlocks('[Tool results]\n<tool_result name="date">2024</tool_result>\nIt is 2024.'), 'It is 2024.')
})

test('text of only tool_result tags becomes empty and clean text is unchanged', () => {
  assert.equal(stripToolResultBlocks('<tool_result name="memory_recall" status="ok">\n{}\n</tool_result>'), '')
  assert.equal(stripToolResultBlocks('Hello, this is a normal response.'), 'Hello, this is a normal response.')
})

// buildToolProtocolInstructions

test('protocol instructions teach tags, multiple calls, results and list every tool', () => {
  const instructions = buildToolProtocolInstructions([
    { name: 'shell', description: 'Run a command', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
    { name: 'date', description: 'Current date', parameters: { type: 'object' } }
  ])
  assert.ok(instructions.startsWith('## Tool Use Protocol'))
  assert.match(instructions, /<tool_call><\/tool_call>/)
  assert.match(instructions, /\{"name": "<tool>", "arguments": \{…\}\}/)
  assert.match(instructions, /several tool calls/)
  assert.match(instructions, /<tool_result name="\.\.\.">/)
  assert.match(instructions, /Never describe the steps/)
  assert.match(instructions, /### Available Tools/)
  assert.ok(instructions.includes('**shell**: Run a command\nParameters: `{"type":"object","properties":{"command":{"type":"string"}}}`'))
  assert.ok(instructions.includes('**date**: Current date\nParameters: `{"type":"object"}`'))
})

test('protocol instructions are empty when there are no tools', () => {
  assert.equal(buildToolProtocolInstructions([]), '')
})

test('the example call in the instructions parses back into a call', () => {
  const instructions = buildToolProtocolInstructions([{ name: 'date', description: 'd', parameters: {} }])
  const block = /<tool_call>\n[^\n]+\n<\/tool_call>/.exec(instructions)?.[0] ?? ''
  assert.deepEqual(parseTextToolCalls(block).calls.map((call) => call.name), ['tool_name'])
})

// robustness

test('200 KB of nested unclosed tags and braces is handled without hanging', () => {
  const hostile = [
    '<tool_call>{"name":"shell","arguments":{'.repeat(5000),
    '<tool_call><invoke>{[{"'.repeat(10000),
    '```tool_call\n{'.repeat(15000),
    '['.repeat(100000) + '1 x' + ']'.repeat(100000),
    '<tool_call>' + '{"a":['.repeat(30000) + 'x' + ']}'.repeat(30000) + '</tool_call>',
    '<think><tool_result>'.repeat(10000)
  ]
  for (const input of hostile) {
    assert.ok(input.length >= 150_000)
    assert.deepEqual(parseTextToolCalls(input).calls, [])
    assert.equal(typeof detectToolProtocolIssue(input, KNOWN), 'boolean')
    assert.equal(typeof stripToolResultBlocks(input), 'string')
  }
})

test('thousands of well-formed calls in one reply are all parsed', () => {
  const response = tagged('date', {}).repeat(4000)
  assert.equal(parseTextToolCalls(response).calls.length, 4000)
})

test('text without <, `, { or [ is skipped by the protocol parser: it never holds a call, and every frame form has one', () => {
  for (const form of [tagged('shell', { command: 'ls' }), '```tool_call\n{"name":"date"}\n```', '```tool date\n{}\n```', '{"name":"date","arguments":{}}', '[{"name":"date","arguments":{}}]']) {
    assert.equal(mayHoldToolProtocol(form), true, form)
    assert.ok(parseTextToolCalls(form).calls.length > 0, form)
  }
  // Prose built from protocol words, tool names, quotes and colons, but none of the four characters:
  // the full parser finds nothing in it either, so skipping it changes no outcome.
  const words = ['tool_call', 'tool_calls', 'invoke', 'toolcall', 'tool-call', 'shell', 'date', '"name":', '"arguments":', '"function":', 'tool', 'json', ':', '"', '\n', ' ', '/', '>', '}', ']', 'example']
  let seed = 7
  const next = (): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed }
  for (let i = 0; i < 500; i++) {
    const text = Array.from({ length: 1 + next() % 40 }, () => words[next() % words.length]).join(next() % 2 === 0 ? ' ' : '')
    assert.equal(mayHoldToolProtocol(text), false, text)
    assert.deepEqual(parseTextToolCalls(text).calls, [], text)
  }
})
