// Run by test/sdk-package.test.ts with Node: the packed package's verifyWebhook / checkWebhook / parseWebhook on given cases.
import { readFileSync } from "node:fs";
import { checkWebhook, parseWebhook, verifyWebhook } from "@vidlive/client";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const real = input.real;
const headers = new Headers(real.headers);
const out = {
  valid: verifyWebhook(real.body, headers, real.secret),
  validFromNodeHeaders: verifyWebhook(Buffer.from(real.body), Object.fromEntries(Object.entries(real.headers)), real.secret),
  tampered: verifyWebhook(`${real.body} `, headers, real.secret),
  wrongSecret: verifyWebhook(real.body, headers, `${real.secret}x`),
  parsed: parseWebhook(real.body, headers, real.secret),
  cases: input.cases.map((c) => checkWebhook(c.body, c.header, c.secret, { nowSeconds: c.now }).valid ? "valid" : checkWebhook(c.body, c.header, c.secret, { nowSeconds: c.now }).reason),
};
console.log(JSON.stringify(out));
