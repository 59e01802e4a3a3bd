/**
 * V8's own answers to "do these objects share a hidden class, and is it a fast one?", for tests
 * that pin an object layout the hot path relies on (src/core/lazy-properties.ts).
 */
import { setFlagsFromString } from 'node:v8'

setFlagsFromString('--allow-natives-syntax')
// eslint-disable-next-line no-new-func -- natives syntax only parses in code compiled after the flag is set
export const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean
// eslint-disable-next-line no-new-func -- as above
export const hasFastProperties = new Function('a', 'return %HasFastProperties(a)') as (a: object) => boolean
