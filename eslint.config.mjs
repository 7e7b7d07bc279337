// `npm run lint`: type-aware checks of promises, the mistakes an async-heavy codebase makes
// silently (a promise nobody awaits or catches; an async function where a callback must return
// void), over the TypeScript sources, tests, benchmarks and examples. Formatting is Prettier's
// (.prettierrc.json), which `npm run lint` runs after this.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', '**/node_modules/**', 'coverage/**', 'src/console/page/**', '**/*.d.ts', '**/*.d.mts', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  {
    files: ['**/*.ts', '**/*.mts', '**/*.cts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
);
