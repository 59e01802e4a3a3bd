/**
 * The entry of a name-keyed map (config agents, providers, profiles) with this name. Names come
 * from clients and models, and a plain `map[name]` answers `__proto__`, `constructor` or
 * `toString` with Object.prototype's members instead of "no such entry".
 */
export function ownEntry<T> (map: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(map, name) ? map[name] : undefined
}
