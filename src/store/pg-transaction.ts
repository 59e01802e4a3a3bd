/**
 * The one way the PostgreSQL stores run a transaction: a pooled connection, BEGIN, the caller's
 * statements, COMMIT; on any error ROLLBACK (its own failure ignored: the connection may be the
 * thing that failed) and the error rethrown; the connection always goes back to the pool.
 */
import type pg from 'pg'

export async function inTransaction<T> (pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    const out = await fn(client)
    await client.query('COMMIT')
    return out
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
}
