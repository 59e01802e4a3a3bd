/**
 * Own, enumerable properties computed on first read (then kept), for the per-turn and per-call
 * objects that carry something costly most of them never use (a child logger, a workspace folder).
 *
 * Why not `{ get log () { … } }` in an object literal: each evaluation defines the accessor with
 * a new getter closure, and measured on Node 20 that keeps the closure — and the whole turn it
 * closes over — alive through young-generation collections until the next full one (with V8's
 * pretenuring off, the share of a turn's allocation promoted fell from 14% to 3% without it;
 * docs/decisions/0175). The likely mechanism: hidden classes live in the old generation, V8
 * builds one around each new getter before it gives the object a dictionary instead, and that
 * discarded class, old garbage, still points at the young getter. Here the getters are made once
 * per kind and shared by every object (which keeps one fast hidden class), and read the object's
 * own inputs.
 */

const INPUT = Symbol('tollgate.lazyInput')

interface Held<S> {
  source: S
  made: Record<string, unknown>
}

/**
 * `kind({ name: (source) => value, … })` returns `attach(target, source)`, which gives `target`
 * those properties, each computed from `source` on its first read. Spreading the object reads
 * them all, as it would read any getter.
 */
export function lazyProperties<S, P extends object> (
  make: { [K in keyof P]: (source: S) => P[K] }
): <T extends object>(target: T, source: S) => T & Readonly<P> {
  const descriptors: PropertyDescriptorMap = {}
  for (const name of Object.keys(make) as Array<keyof P & string>) {
    const build = make[name]
    descriptors[name] = {
      enumerable: true,
      configurable: true,
      get (this: { [INPUT]: Held<S> }): unknown {
        const held = this[INPUT]
        if (!Object.hasOwn(held.made, name)) held.made[name] = build(held.source)
        return held.made[name]
      }
    }
  }
  return <T extends object>(target: T, source: S): T & Readonly<P> => {
    Object.defineProperty(target, INPUT, { value: { source, made: {} } satisfies Held<S> })
    return Object.defineProperties(target, descriptors) as T & Readonly<P>
  }
}
