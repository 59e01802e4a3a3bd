// Lint: neostandard (the style fastify uses) matched to this code base — no semicolons, single
// quotes — plus a 140-character line limit. `npm run lint`; `npm test` runs it first.
import neostandard from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    ignores: ['dist/**', 'public/**', 'packages/*/dist/**', 'coverage/**', '**/node_modules/**']
  }),
  {
    rules: {
      // Long string and template literals (error texts, test names) stay whole: a split message is
      // harder to grep for than a long line is to read. Code and comments keep to 140.
      '@stylistic/max-len': ['error', { code: 140, ignoreUrls: true, ignoreRegExpLiterals: true, ignoreStrings: true, ignoreTemplateLiterals: true }],
      // `void promise` marks a deliberately unawaited call (Fastify replies, fire-and-forget closes).
      'no-void': ['error', { allowAsStatement: true }],
      // schemas/ declare a TypeBox schema and its static type under one name, on purpose.
      '@typescript-eslint/no-redeclare': 'off',
      // The code base wraps long object literals by line length, several properties to a line.
      '@stylistic/object-property-newline': 'off',
      // A `return` closing a switch case says "done" where a fall-through would be a bug.
      'no-useless-return': 'off'
    }
  },
  {
    // Tests and fixtures write shell and config text that contains `${…}` literally.
    files: ['test/**/*.ts'],
    rules: { 'no-template-curly-in-string': 'off' }
  }
]
