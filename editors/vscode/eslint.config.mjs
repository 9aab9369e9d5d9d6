// ESLint for the extension's TypeScript: typescript-eslint's strict,
// type-checked rules (npm run lint; scripts/test.sh runs it). Formatting is
// prettier's (.prettierrc.json), not ESLint's.
import eslint from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["out/", "dist/", "e2e/", "media/", "test/fixtures/", "*.mjs", "scripts/"] },
  eslint.configs.recommended,
  tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Numbers and booleans read well in messages; objects, undefined and null do not.
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true, allowBoolean: true }],
      // `() => void f()` and `(x) => f(x)` returning void are the callbacks' usual shape.
      "@typescript-eslint/no-confusing-void-expression": ["error", { ignoreArrowShorthand: true }],
      // The VS Code API types its classes structurally (a Disposable is any { dispose() }), and so does the extension.
      "@typescript-eslint/no-unsafe-class-instance-assignment": "off",
      // A leading underscore marks a parameter a callback's signature needs but this one does not read.
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" }],
      // The extension checks at run time what the server and other extensions' providers send, where their declared types call a value impossible.
      "@typescript-eslint/no-unnecessary-condition": "off",
      // node:test's test() and describe() return promises the runner awaits itself.
      "@typescript-eslint/no-floating-promises": ["error", { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "it", "describe", "suite"] }] }],
    },
  },
  {
    // The tests read the server's JSON and the vscode stub's records as they
    // come, and a missing value fails the test where it is read.
    files: ["test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/require-await": "off", // the vscode stub's methods are async as the real API's are
      "@typescript-eslint/no-unnecessary-type-parameters": "off", // typed fixtures read as T
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
);
