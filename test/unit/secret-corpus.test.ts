import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import { findSecretSpans, mayHoldSecret, scrubText, scrubValue } from '../../src/core/security/redact.js'
import { SECRET_RULES } from '../../src/core/security/secret-rules.js'
import { corpusText, leakedSecrets, NEAR_MISSES, secretCorpus } from '../helpers/secret-corpus.js'

test('the corpus has at least thirty secrets and thirty near-misses', () => {
  assert.ok(secretCorpus().length >= 30)
  assert.ok(NEAR_MISSES.length >= 30)
})

test('every corpus secret is masked when it stands alone', () => {
  for (const secret of secretCorpus()) {
    assert.deepEqual(leakedSecrets([secret], scrubText(secret.text)), [], `${secret.name}: ${scrubText(secret.text)}`)
  }
})

test('every corpus secret is masked inside the whole corpus text', () => {
  const corpus = secretCorpus()
  assert.deepEqual(leakedSecrets(corpus, scrubText(corpusText(corpus))), [])
})

test('every near-miss comes through unchanged, alone and inside the corpus text', () => {
  for (const nearMiss of NEAR_MISSES) assert.equal(scrubText(nearMiss.text), nearMiss.text, nearMiss.name)
  const scrubbed = scrubText(corpusText(secretCorpus()))
  for (const nearMiss of NEAR_MISSES) assert.ok(scrubbed.includes(nearMiss.text), `${nearMiss.name} was changed in the corpus text`)
})

test('the structured scrubber masks the corpus inside JSON values', () => {
  const corpus = secretCorpus()
  const value = { output: corpusText(corpus), lines: corpus.map((c) => c.text) }
  assert.deepEqual(leakedSecrets(corpus, JSON.stringify(scrubValue(value))), [])
})

test('each corpus secret keeps its first four characters and the text around it', () => {
  assert.equal(scrubText('x aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY y'),
    'x aws_secret_access_key = wJal*[REDACTED] y')
  assert.equal(scrubText('hook https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX.'),
    'hook https://hooks.slack.com/services/T000*[REDACTED].')
  assert.equal(scrubText('-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\ndef==\n-----END RSA PRIVATE KEY-----'),
    '-----BEGIN RSA PRIVATE KEY-----\nMIIE*[REDACTED]\n-----END RSA PRIVATE KEY-----')
})

test('a private key cut off before its END line is masked to the end of the text', () => {
  assert.equal(scrubText('-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAAB'),
    '-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl*[REDACTED]')
})

/** The reference semantics: one global alternation of every rule, leftmost match first. */
function globalSpans (text: string): Array<[number, number, string]> {
  const source = SECRET_RULES.map((rule, i) => `(?<r${i}>${rule.pattern
    .replaceAll('(?<head>', `(?<h${i}>`).replaceAll('(?<secret>', `(?<s${i}>`)
    .replaceAll('(?<quote>', `(?<q${i}>`).replaceAll(String.raw`\k<quote>`, String.raw`\k<q${i}>`)})`).join('|')
  return [...text.matchAll(new RegExp(source, 'g'))].map((m) => {
    const i = SECRET_RULES.findIndex((_r, k) => m.groups?.[`r${k}`] !== undefined)
    return [m.index, m.index + m[0].length, SECRET_RULES[i]?.id ?? '?']
  })
}

/** The anchored rules' spans (the context rules' spans are no part of the one alternation). */
function anchoredSpans (text: string): Array<[number, number, string]> {
  return findSecretSpans(text).filter((s) => SECRET_RULES.includes(s.rule)).map((s) => [s.start, s.end, s.rule.id])
}

test('searching from anchors finds exactly what one alternation of all rules finds', () => {
  const corpus = corpusText(secretCorpus())
  assert.deepEqual(anchoredSpans(corpus), globalSpans(corpus))
  const alphabet = 'aAbBeEkKpPsStT:=/@-_.  "\'\nxyz0129ghoruIJKLMNYZ'
  const pieces = ['password', 'token', 'api_key', 'secret', 'Bearer ', 'https://', 'u:p@', 'sk-', 'sk_live_', 'AKIA', 'eyJ',
    '-----BEGIN PRIVATE KEY-----', '-----END', 'xoxb-', 'ghp_', '=', ': ', '=>', ':=', 'hooks.slack.com/services/',
    'Authorization: Basic ', '"', "'", 'aws_secret_access_key ', 'SecretAccessKey', 'GOCSPX-', 'glrt-', 'dapi', 'hvs.', 'AGE-SECRET-KEY-1']
  for (let round = 0; round < 2000; round++) {
    let text = ''
    while (text.length < 200) text += randomInt(3) === 0 ? pieces[randomInt(pieces.length)] : alphabet[randomInt(alphabet.length)]
    assert.deepEqual(anchoredSpans(text), globalSpans(text), JSON.stringify(text))
  }
})

test('the log pre-check lets no corpus secret skip scrubbing, even JSON-encoded', () => {
  for (const secret of secretCorpus()) {
    assert.ok(mayHoldSecret(secret.text), secret.name)
    assert.ok(mayHoldSecret(JSON.stringify({ msg: `before\n${secret.text}` })), `${secret.name} in JSON`)
  }
})

const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'

test('a bare AWS secret key is masked in a text that holds an AKIA or ASIA key id, before or after it', () => {
  assert.equal(scrubText(`id AKIAIOSFODNN7EXAMPLE key ${AWS_SECRET}`), 'id AKIA*[REDACTED] key wJal*[REDACTED]')
  assert.equal(scrubText(`${AWS_SECRET} belongs to ASIAIOSFODNN7EXAMPLE`), 'wJal*[REDACTED] belongs to ASIA*[REDACTED]')
})

test('a bare 40-character base64 run is left alone without a key id, and a git SHA even with one', () => {
  assert.equal(scrubText(`checksum ${AWS_SECRET}`), `checksum ${AWS_SECRET}`)
  const sha = 'commit 3f786850e387550fdab836ed7e6dc881de23001b by AKIAIOSFODNN7EXAMPLE'
  assert.equal(scrubText(sha), 'commit 3f786850e387550fdab836ed7e6dc881de23001b by AKIA*[REDACTED]')
})

test('an AWS secret key after its name with a blank, a colon or quotes is masked without a key id', () => {
  for (const text of [`aws configure set aws_secret_access_key ${AWS_SECRET}`, `"SecretAccessKey": "${AWS_SECRET}"`, `secretAccessKey ${AWS_SECRET}`]) {
    assert.ok(!scrubText(text).includes(AWS_SECRET.slice(4, 12)), text)
  }
})

test('the structured scrubber masks a bare AWS secret key in one string when another string of the value holds the key id', () => {
  assert.deepEqual(scrubValue({ args: [AWS_SECRET, 'AKIAIOSFODNN7EXAMPLE'] }), { args: ['wJal*[REDACTED]', 'AKIA*[REDACTED]'] })
  assert.deepEqual(scrubValue({ args: [AWS_SECRET] }), { args: [AWS_SECRET] })
})
