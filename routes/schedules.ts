/**
 * /v1/schedules: turns the gateway starts on a cron expression, owned by the principal that made
 * them. Behaviour lives in src/schedule/ (Schedules for these reads and writes, Scheduler for the
 * ticks).
 */
import type { FastifyInstance } from 'fastify'
import { Problem } from '../schemas/common.js'
import {
  DEFAULT_RUNS_PAGE, Schedule, ScheduleCreated, ScheduleIdParams, SchedulePatch, ScheduleRequest, ScheduleRunsPage, ScheduleRunsQuery,
  SchedulesPage
} from '../schemas/schedule.js'
import { authenticate, principalOf } from '../src/auth/http.js'
import { publicSchedule } from '../src/schedule/schedules.js'

const NOT_YOURS = 'Another principal\'s schedule answers 404 SCHEDULE_NOT_FOUND, like a missing one.'

export default async function scheduleRoutes (app: FastifyInstance): Promise<void> {
  const { schedules, auth } = app.gateway

  app.post('/v1/schedules', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Create a schedule',
      description: 'Each tick of `cron` (read in `timezone`, default UTC) starts a detached turn as the caller, with `message`, ' +
        '`agent`, `session_id` and `budget_usd` as a turn request would give them; `on_approval` and `overlap` say what happens ' +
        'when a call needs approval and when the previous turn still runs. 400 `INVALID_CRON` / `INVALID_TIME_ZONE` for an ' +
        'expression or zone that cannot be read; 409 `TOO_MANY_SCHEDULES` past `schedules.max_per_principal`.',
      body: ScheduleRequest,
      response: { 201: ScheduleCreated, 400: Problem, 401: Problem, 403: Problem, 409: Problem }
    }
  }, async (request, reply) => {
    const created = publicSchedule(await schedules.create(principalOf(request), request.body as ScheduleRequest))
    return await reply.code(201).send({ schedule_id: created.schedule_id, next_run_at: created.next_run_at })
  })

  app.get('/v1/schedules', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: { summary: 'List the principal\'s schedules', response: { 200: SchedulesPage, 401: Problem, 403: Problem } }
  }, async (request) => {
    return { items: (await schedules.list(principalOf(request))).map(publicSchedule) }
  })

  app.get('/v1/schedules/:id', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'Get a schedule', description: NOT_YOURS, params: ScheduleIdParams, response: { 200: Schedule, 401: Problem, 403: Problem, 404: Problem }
    }
  }, async (request) => {
    const { id } = request.params as { id: string }
    return publicSchedule(await schedules.get(principalOf(request), id))
  })

  app.patch('/v1/schedules/:id', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Change a schedule',
      description: 'Any field of the request may change; the next tick is computed again from now (ticks missed while disabled ' +
        'are not made up). ' + NOT_YOURS,
      params: ScheduleIdParams,
      body: SchedulePatch,
      response: { 200: Schedule, 400: Problem, 401: Problem, 403: Problem, 404: Problem }
    }
  }, async (request) => {
    const { id } = request.params as { id: string }
    return publicSchedule(await schedules.update(principalOf(request), id, request.body as SchedulePatch))
  })

  app.delete('/v1/schedules/:id', {
    onRequest: authenticate(auth, 'turns:write'),
    schema: {
      summary: 'Delete a schedule and its runs',
      description: 'No tick of it starts a turn after the answer; its turns already running go on. ' + NOT_YOURS,
      params: ScheduleIdParams,
      response: { 204: { description: 'Deleted', type: 'null' }, 401: Problem, 403: Problem, 404: Problem }
    }
  }, async (request, reply) => {
    const { id } = request.params as { id: string }
    await schedules.delete(principalOf(request), id)
    return await reply.code(204).send()
  })

  app.get('/v1/schedules/:id/runs', {
    onRequest: authenticate(auth, 'turns:read'),
    schema: {
      summary: 'List a schedule\'s runs',
      description: 'Newest tick first: the turn each tick started (its status as the outcome), or why none started (skipped with ' +
        'a reason, not_started with the error). ' + NOT_YOURS,
      params: ScheduleIdParams,
      querystring: ScheduleRunsQuery,
      response: { 200: ScheduleRunsPage, 400: Problem, 401: Problem, 403: Problem, 404: Problem }
    }
  }, async (request) => {
    const { id } = request.params as { id: string }
    const { limit } = request.query as ScheduleRunsQuery
    return { items: await schedules.runs(principalOf(request), id, limit ?? DEFAULT_RUNS_PAGE) }
  })
}
