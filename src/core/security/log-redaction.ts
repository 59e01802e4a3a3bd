/** pino redaction paths: credentials never reach a log line, whatever logs the request. */
export const redactionPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["sec-websocket-protocol"]',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.apiKey',
  '*.api_key',
  '*.password',
  '*.token',
  '*.secret'
]
