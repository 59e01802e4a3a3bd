/**
 * Large documents of the SQLite store are kept deflated (decision 0278). SQLite stores a value as
 * it is given, and a B-tree page holds whole rows: a finished turn's record or session of ~2.5 KB
 * took a 4 KiB page of its own, and an event row over ~1 KB (WITHOUT ROWID: an index B-tree) an
 * overflow page of its own. PostgreSQL compresses such values itself (TOAST); SQLite does not.
 *
 * A packed document is a BLOB (raw deflate of its UTF-8 JSON), an unpacked one TEXT as before, so
 * rows written earlier read as they did, and the two never need a marker.
 */
import { deflateRawSync, inflateRawSync, constants } from 'node:zlib'

/** Documents longer than this (UTF-16 units) are deflated; shorter ones gain too little for the CPU. */
export const PACK_OVER = 512

/** The document as stored: deflated when that is smaller. */
export function packDoc (doc: string): string | Buffer {
  if (doc.length <= PACK_OVER) return doc
  const raw = Buffer.from(doc, 'utf8')
  // Level 1: most of the gain for a fraction of the default level's CPU, on the event loop.
  const packed = deflateRawSync(raw, { level: constants.Z_BEST_SPEED })
  return packed.length < raw.length ? packed : doc
}

/** The document as written: a BLOB is inflated, TEXT is returned as it is. */
export function unpackDoc (stored: string | Buffer): string {
  return typeof stored === 'string' ? stored : inflateRawSync(stored).toString('utf8')
}
