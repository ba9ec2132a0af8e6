/**
 * The suite on a busy machine (issue 23, item 19): a lint over the test files.
 *
 * Bun gives every test and every hook 5 s unless the file says otherwise. No
 * config changes that: bun 1.4 has no `[test] timeout` key in bunfig.toml (the
 * one this repository had was ignored), and `--timeout` reaches only runs that
 * pass it. On 2 cores at load 7–14, starting a service, a browser or ffmpeg
 * takes longer than 5 s, so:
 *
 * - a test file that starts a process or a browser (itself, or through a
 *   module it imports, followed transitively) states its timeouts: a top-level
 *   `setDefaultTimeout(n)` or a timeout on each test and hook; none under
 *   MIN_MS when written as a number;
 * - nothing waits for the network to go idle (a page that polls never does;
 *   wait for a concrete element or response instead).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const ROOT = join(import.meta.dir, "..");
const MIN_MS = 60_000;
/** Written in two parts so this file does not name it. */
const IDLE = ["network", "idle"].join("");
/** What starts a process or a browser. */
const STARTS = [/\bBun\.spawn(Sync)?\b/, /\bspawn(Sync)?\s*\(/, /["']node:child_process["']|["']child_process["']/, /\bchromium\s*\.\s*launch\b/, /\bBun\.\$|\$`/];
const REGISTRATIONS = new Set(["test", "it", "beforeAll", "afterAll", "beforeEach", "afterEach"]);
const HOOKS = new Set(["beforeAll", "afterAll", "beforeEach", "afterEach"]);
/** `test.each(rows)`, `test.if(c)`…: these make the function whose call is checked. */
const FACTORIES = new Set(["each", "if", "skipIf", "todoIf"]);

const parse = (file: string, text = readFileSync(file, "utf8")) => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);

/** The repository's modules a file loads at run time (type-only imports excluded). */
function localImports(sf: ts.SourceFile): string[] {
  const specs: string[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) && !n.importClause?.isTypeOnly && ts.isStringLiteral(n.moduleSpecifier)) specs.push(n.moduleSpecifier.text);
    else if (ts.isExportDeclaration(n) && !n.isTypeOnly && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) specs.push(n.moduleSpecifier.text);
    else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0])) specs.push(n.arguments[0].text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return specs
    .filter((s) => s.startsWith("./") || s.startsWith("../"))
    .map((s) => resolve(dirname(sf.fileName), s))
    .map((p) => [p, `${p}.ts`, join(p, "index.ts")].find((c) => existsSync(c) && c.endsWith(".ts")))
    .filter((p): p is string => p !== undefined);
}

const startsMemo = new Map<string, string | null>();
/** The file (this one or one it imports) that starts a process or browser, or null. */
function startsProcess(file: string, seen = new Set<string>()): string | null {
  const known = startsMemo.get(file);
  if (known !== undefined) return known;
  if (seen.has(file)) return null;
  const first = seen.size === 0;
  seen.add(file);
  const text = readFileSync(file, "utf8");
  let found: string | null = STARTS.some((p) => p.test(text)) ? file : null;
  for (const dep of found ? [] : localImports(parse(file, text))) {
    found = startsProcess(dep, seen);
    if (found) break;
  }
  // Only a definite answer is kept: a "no" reached through a cycle may be partial.
  if (found || first) startsMemo.set(file, found);
  return found;
}

/** A number written in the source (`120_000`, `2 * 60_000`, a top-level const), or undefined. */
function numberOf(e: ts.Expression, sf: ts.SourceFile): number | undefined {
  if (ts.isNumericLiteral(e)) return Number(e.text.replaceAll("_", ""));
  if (ts.isParenthesizedExpression(e)) return numberOf(e.expression, sf);
  if (ts.isBinaryExpression(e)) {
    const [a, b] = [numberOf(e.left, sf), numberOf(e.right, sf)];
    if (a === undefined || b === undefined) return undefined;
    if (e.operatorToken.kind === ts.SyntaxKind.AsteriskToken) return a * b;
    if (e.operatorToken.kind === ts.SyntaxKind.PlusToken) return a + b;
    return undefined;
  }
  if (ts.isIdentifier(e)) {
    for (const s of sf.statements) {
      if (!ts.isVariableStatement(s)) continue;
      for (const d of s.declarationList.declarations) if (ts.isIdentifier(d.name) && d.name.text === e.text && d.initializer) return numberOf(d.initializer, sf);
    }
  }
  return undefined;
}

/** The name a call starts from (`test` in `test.if(x)(…)`) and the property names on the way. */
function calleeChain(e: ts.Expression): { base: string; props: string[] } {
  const props: string[] = [];
  for (;;) {
    if (ts.isPropertyAccessExpression(e)) {
      props.push(e.name.text);
      e = e.expression;
    } else if (ts.isCallExpression(e)) e = e.expression;
    else return { base: ts.isIdentifier(e) ? e.text : "", props };
  }
}

/**
 * What is wrong with one test file's timeouts: each problem as `file:line …`.
 * `starts` says whether the file starts a process or browser.
 */
function timeoutProblems(file: string, text: string, starts: boolean): string[] {
  const sf = parse(file, text);
  const problems: string[] = [];
  const where = (n: ts.Node) => `${relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`;
  if (text.includes(IDLE)) problems.push(`${relative(ROOT, file)} waits for ${IDLE}: wait for a concrete element or response`);
  if (!starts) return problems;

  let fileDefault: number | undefined;
  for (const s of sf.statements) {
    if (!ts.isExpressionStatement(s) || !ts.isCallExpression(s.expression)) continue;
    const { base, props } = calleeChain(s.expression.expression);
    if ((base === "setDefaultTimeout" && props.length === 0) || (base === "jest" && props[0] === "setTimeout")) {
      const arg = s.expression.arguments[0];
      const ms = arg && numberOf(arg, sf);
      if (ms !== undefined && ms < MIN_MS) problems.push(`${where(s)} setDefaultTimeout(${ms}) is under ${MIN_MS} ms`);
      fileDefault = ms ?? MIN_MS;
    }
  }

  const visit = (n: ts.Node) => {
    if (ts.isCallExpression(n)) {
      const { base, props } = calleeChain(n.expression);
      const factory = ts.isPropertyAccessExpression(n.expression) && FACTORIES.has(n.expression.name.text);
      if (REGISTRATIONS.has(base) && !factory && !props.includes("skip") && !props.includes("todo")) {
        const fnAt = n.arguments.findIndex((a) => ts.isArrowFunction(a) || ts.isFunctionExpression(a));
        const timeout = n.arguments[(fnAt >= 0 ? fnAt : HOOKS.has(base) ? 0 : 1) + 1];
        const given = timeout && ts.isObjectLiteralExpression(timeout) ? timeout.properties.find((p) => p.name?.getText(sf) === "timeout") : timeout;
        const value = given && ts.isPropertyAssignment(given) ? numberOf(given.initializer, sf) : given && !ts.isObjectLiteralElement(given) ? numberOf(given, sf) : undefined;
        if (!given && fileDefault === undefined) problems.push(`${where(n)} ${base}(…) has no timeout (the file starts a process or browser)`);
        else if (value !== undefined && value < MIN_MS) problems.push(`${where(n)} ${base}(…) timeout ${value} ms is under ${MIN_MS} ms`);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return problems;
}

async function testFiles(): Promise<string[]> {
  const found: string[] = [];
  for await (const f of new Bun.Glob("{src,media,machines,test,packages,scripts,bench}/**/*.test.ts").scan({ cwd: ROOT })) {
    if (!f.split("/").includes("node_modules")) found.push(join(ROOT, f));
  }
  return found.sort();
}

describe("test files on a busy machine", () => {
  test("every file that starts a process or browser states timeouts of at least 60 s; none waits for the network to go idle", async () => {
    const files = await testFiles();
    expect(files.length).toBeGreaterThan(100);
    const starting = files.filter((f) => startsProcess(f));
    // The suite's own integration tests are among them (a broken detector would find none).
    expect(starting.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(["test/readme.test.ts", "test/openapi-page.test.ts", "test/videos.test.ts"]));
    const problems = files.flatMap((f) => timeoutProblems(f, readFileSync(f, "utf8"), starting.includes(f)));
    expect(problems).toEqual([]);
  }, 120_000);

  test("the lint finds what it is meant to find", () => {
    const f = join(ROOT, "test", "example.test.ts");
    const check = (src: string, starts = true) => timeoutProblems(f, src, starts).map((p) => p.replace(/^test\/example\.test\.ts:?\d* ?/, ""));
    const body = `import { test, beforeAll } from "bun:test";\n`;
    expect(check(`${body}beforeAll(async () => {});\ntest("a", async () => {});\ntest.skip("b", () => {});`)).toEqual([
      "beforeAll(…) has no timeout (the file starts a process or browser)",
      "test(…) has no timeout (the file starts a process or browser)",
    ]);
    expect(check(`${body}beforeAll(async () => {});\ntest("a", async () => {});`, false)).toEqual([]);
    expect(check(`${body}const T = 2 * 60_000;\nbeforeAll(async () => {}, T);\ntest("a", async () => {}, { timeout: 120_000 });\ntest.if(true)("b", () => {}, 90_000);`)).toEqual([]);
    expect(check(`${body}test("a", async () => {}, 30_000);\ntest.each([1])("b %d", () => {});`)).toEqual([
      "test(…) timeout 30000 ms is under 60000 ms",
      "test(…) has no timeout (the file starts a process or browser)",
    ]);
    expect(check(`import { setDefaultTimeout, test } from "bun:test";\nsetDefaultTimeout(120_000);\ntest("a", async () => {});`)).toEqual([]);
    expect(check(`import { setDefaultTimeout, test } from "bun:test";\nsetDefaultTimeout(5_000);\ntest("a", async () => {});`)).toEqual(["setDefaultTimeout(5000) is under 60000 ms"]);
    expect(check(`${body}test("a", async () => { await page.waitForLoadState("${IDLE}"); }, 120_000);`, false)).toEqual([`waits for ${IDLE}: wait for a concrete element or response`]);
  }, 60_000);

  test("a test reaching a process through a helper counts as starting one", () => {
    expect(startsProcess(join(ROOT, "test", "support", "service-process.ts"))).toBe(join(ROOT, "test", "support", "service-process.ts"));
    // videos.test.ts starts no process itself; its service helper may (sqld), and the service runs ffmpeg.
    expect(startsProcess(join(ROOT, "test", "videos.test.ts"))).not.toBeNull();
    expect(startsProcess(join(ROOT, "machines", "video-machine.ts"))).toBeNull();
  }, 60_000);
});
