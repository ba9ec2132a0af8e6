import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

/** Issue 25 item 1: no function in src/videos/ is over this many lines (counted from its first to its last line). */
const MAX_LINES = 60;

/** Every function, method, accessor and arrow of one file with its line count, longest first. */
function functionLengths(file: string): { name: string; line: number; lines: number }[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found: { name: string; line: number; lines: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ name: nameOf(node), line: start + 1, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.sort((a, b) => b.lines - a.lines);
}

function nameOf(node: ts.Node): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  if (ts.isCallExpression(parent)) return `(argument of ${parent.expression.getText().slice(0, 40)})`;
  return "(anonymous)";
}

const DIR = import.meta.dir;

describe("src/videos function length", () => {
  test(`no function is over ${MAX_LINES} lines`, () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith(".ts"));
    const over = files.flatMap((f) =>
      functionLengths(join(DIR, f))
        .filter((fn) => fn.lines > MAX_LINES)
        .map((fn) => `${f}:${fn.line} ${fn.name} (${fn.lines} lines)`),
    );
    expect(over).toEqual([]);
  });
});
