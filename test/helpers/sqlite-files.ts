/**
 * SQLite files as a crash would leave them: the database and its WAL copied as they stand (every
 * committed write is in one or the other), for a store opened on the copy to recover.
 */
import { existsSync } from 'node:fs'
import { copyFile } from 'node:fs/promises'

export async function copyAsCrashed (path: string, to: string): Promise<void> {
  await copyFile(path, to)
  if (existsSync(`${path}-wal`)) await copyFile(`${path}-wal`, `${to}-wal`)
}
