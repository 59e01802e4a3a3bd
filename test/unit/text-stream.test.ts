import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import { StreamedTextScrubber } from '../../src/core/security/text-stream.js'
import { corpusText, leakedSecrets, NEAR_MISSES, secretCorpus } from '../helpers/secret-corpus.js'

/** Streams `text` through a scrubber in the given pieces; answers every piece shown, the last one from end(). */
function stream (pieces: readonly string[]): string[] {
  const scrubber = new StreamedTextScrubber()
  const shown = pieces.map((p) => scrubber.push(p))
  shown.push(scrubber.end())
  return shown.filter((s) => s !== '')
}

/** Cuts `text` into pieces of 1 to `max` characters at random places. */
function randomPieces (text: string, max: number): string[] {
  const pieces: string[] = []
  for (let at = 0; at < text.length;) {
    const size = 1 + randomInt(max)
    pieces.push(text.slice(at, at + size))
    at += size
  }
  return pieces
}

test('no corpus secret leaks from a stream cut into random pieces, and every near-miss comes through', () => {
  const corpus = secretCorpus()
  const text = corpusText(corpus)
  for (const max of [1, 3, 8, 40]) {
    const shown = stream(randomPieces(text, max)).join('')
    assert.deepEqual(leakedSecrets(corpus, shown), [], `pieces of up to ${max}`)
    for (const nearMiss of NEAR_MISSES) assert.ok(shown.includes(nearMiss.text), `${nearMiss.name} (pieces of up to ${max})`)
  }
})

test('each corpus secret alone, split after every character, never leaks', () => {
  for (const secret of secretCorpus()) {
    const shown = stream(Array.from(`Here it is: ${secret.text} — keep it safe.`)).join('')
    assert.deepEqual(leakedSecrets([secret], shown), [], `${secret.name}: ${shown}`)
  }
})

test('a key split across two pieces is masked once it is whole', () => {
  assert.deepEqual(stream(['Your key is sk-pro', 'j-abcdefghijklmnop1234 and', ' nothing else.']),
    ['Your key is ', 'sk-p*[REDACTED] and', ' nothing else.'])
})

test('a credential whose value comes in the piece after its name is masked', () => {
  assert.equal(stream(['Set ', 'password', ' = ', 'hunter2hunter2', ' and go.']).join(''), 'Set password = hunt*[REDACTED] and go.')
  assert.equal(stream(['curl -H "Authorization: Bearer ', 'abcdefgh', '12345678" https://x']).join(''),
    'curl -H "Authorization: Bearer abcd*[REDACTED]" https://x')
})

test('a quoted credential with blanks inside is held until its quote closes', () => {
  const shown = stream(['secret: "correct ', 'horse ', 'battery ', 'staple" done'])
  assert.equal(shown.join(''), 'secret: "corr*[REDACTED]" done')
  assert.ok(shown.every((s) => !s.includes('horse')), JSON.stringify(shown))
})

test('a private key is held from its BEGIN line to its END line and shown masked', () => {
  const key = '-----BEGIN RSA PRIVATE KEY-----\nMIIEabcdefghij\nklmnopqrstuv==\n-----END RSA PRIVATE KEY-----'
  const shown = stream(randomPieces(`Here:\n${key}\nDone.`, 5))
  assert.equal(shown.join(''), 'Here:\n-----BEGIN RSA PRIVATE KEY-----\nMIIE*[REDACTED]\n-----END RSA PRIVATE KEY-----\nDone.')
})

test('plain prose goes out as it comes, without a lone blank as a piece', () => {
  assert.deepEqual(stream(['Hello', ' wor', 'ld', ', how', ' are', ' you?', ' ', 'Fine.']),
    ['Hello', ' wor', 'ld', ', how', ' are', ' you?', ' Fine.'])
  assert.deepEqual(stream(['Café', ' (naïve', ' 3', ' don’t', ' stop)']), ['Café', ' (naïve', ' 3', ' don’t', ' stop)'])
})

test('a word that could still become a secret waits for the blank after it', () => {
  // A key shape could begin in it: `sk`, `gh`, `AKIA`, `eyJ`, also after a bracket.
  assert.deepEqual(stream(['Use ', 'sk', '-proj-abcdefghijklmnop1234', ' now']), ['Use ', 'sk-p*[REDACTED] now'])
  // After an AWS key id every word waits (a bare secret key may follow), as before.
  assert.deepEqual(stream(['Id ', 'AKIA', 'IOSFODNN7EXAMPLE', ' ok', ' go']), ['Id ', 'AKIA*[REDACTED] ', 'ok ', 'go'])
  assert.deepEqual(stream(['(gh', 'p_abcdefghijklmnopqrstuvwxyz)', ' ok']), ['(ghp_*[REDACTED]) ok'])
  assert.deepEqual(stream(['t ', 'eyJ', 'hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig', ' ok']), ['t ', 'eyJh*[REDACTED] ok'])
  // Not plain: it waits whatever it is.
  assert.deepEqual(stream(['a ', 'well-', 'known', ' fact']), ['a ', 'well-known fact'])
  // A value a rule would mask once it is 8 long: after a credential name or `Bearer`.
  assert.deepEqual(stream(['password: ', 'hunt', 'er22hunter', ' ok']), ['password: ', 'hunt*[REDACTED] ok'])
  assert.deepEqual(stream(['Bearer ', 'abc', 'defgh123', ' ok']), ['Bearer ', 'abcd*[REDACTED] ok'])
  assert.deepEqual(stream(['aws_secret_access_key ', 'wJalrXUtnFEMI', 'K7MDENGbPxRfiCYEXAMPLEKEY12', ' ok']),
    ['aws_secret_access_key ', 'wJal*[REDACTED]', ' ok'])
  // Near look-alikes go out at once.
  assert.deepEqual(stream(['skill', ' shop', ' Alpha']), ['skill', ' shop', ' Alpha'])
})

test('a bare AWS secret key is masked when the stream named its key id earlier', () => {
  const shown = stream(['Key id AKIAIOSFODNN7EXAMPLE', ' and secret ', 'wJalrXUtnFEMI/K7MDENG/', 'bPxRfiCYEXAMPLEKEY.']).join('')
  assert.equal(shown, 'Key id AKIA*[REDACTED] and secret wJal*[REDACTED].')
})

test('held text past 32 KiB is released, scrubbed as it stands', () => {
  const scrubber = new StreamedTextScrubber()
  const key = `sk-${'a1'.repeat(17_000)}`
  const shown: string[] = []
  for (let at = 0; at < key.length; at += 1000) shown.push(scrubber.push(key.slice(at, at + 1000)))
  shown.push(scrubber.push(' done'), scrubber.end())
  const released = shown.filter((s) => s !== '')
  assert.equal(released[0], 'sk-a*[REDACTED]', 'the first 32 KiB went out masked without waiting for the word to end')
  assert.equal(released.join('').endsWith(' done'), true)
})
