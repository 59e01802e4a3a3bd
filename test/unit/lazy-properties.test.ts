import assert from 'node:assert/strict'
import { test } from 'node:test'
import { lazyProperties } from '../../src/core/lazy-properties.js'
import { haveSameMap, hasFastProperties } from '../helpers/v8-shape.js'

const withGreeting = lazyProperties<{ name: string, made: string[] }, { greeting: string, shout: string }>({
  greeting: ({ name, made }) => {
    made.push('greeting')
    return `hello ${name}`
  },
  shout: ({ name, made }) => {
    made.push('shout')
    return name.toUpperCase()
  }
})

test('a lazy property is computed on its first read only, and never when nobody reads it', () => {
  const made: string[] = []
  const o = withGreeting({ id: 1 }, { name: 'ada', made })
  assert.deepEqual(made, [])
  assert.equal(o.greeting, 'hello ada')
  assert.equal(o.greeting, 'hello ada')
  assert.deepEqual(made, ['greeting'])
  assert.equal(o.id, 1)
})

test('lazy properties are own and enumerable: a spread copies their values (and reads them)', () => {
  const made: string[] = []
  const copy = { ...withGreeting({ id: 2 }, { name: 'bo', made }) }
  assert.deepEqual(copy, { id: 2, greeting: 'hello bo', shout: 'BO' })
  assert.deepEqual(made.sort(), ['greeting', 'shout'])
})

test('objects given lazy properties of one kind share one fast hidden class (their getters are shared, not a closure each)', () => {
  const a = withGreeting({ id: 1 }, { name: 'a', made: [] })
  const b = withGreeting({ id: 2 }, { name: 'b', made: [] })
  assert.equal(a.greeting, 'hello a')
  assert.equal(haveSameMap(a, b), true)
  assert.equal(hasFastProperties(a), true)
})

test('a lazy property may bear the name of an Object.prototype member', () => {
  const withName = lazyProperties<string, { constructor: string }>({ constructor: (source) => `made from ${source}` })
  assert.equal(withName({}, 'x').constructor, 'made from x')
})
