// Run by test/sdk-package.test.ts with Node: the packed package's verifyWebhook / checkWebhook / parseWebhook on given cases.
import { readFileSync } from "node:fs";
import { checkWebhook, parseWebhook, verifyWebhook } from "@vidlive/client";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const real = input.real;
const headers = new Headers(real.headers);
const out = {
  valid: verifyWebhook({ body: real.body, headers, secret: real.secret }),
  validFromNodeHeaders: verifyWebhook({ body: Buffer.from(real.body), headers: Object.fromEntries(Object.entries(real.headers)), secret: real.secret }),
  tampered: verifyWebhook({ body: `${real.body} `, headers, secret: real.secret }),
  wrongSecret: verifyWebhook({ body: real.body, headers, secret: `${real.secret}x` }),
  // The old positional forms (either order) are refused, not answered.
  positional: [() => verifyWebhook(real.body, headers, real.secret), () => verifyWebhook(real.secret, headers.get("x-service-signature"), real.body)].map((f) => {
    try {
      return String(f());
    } catch (err) {
      return err.name;
    }
  }),
  parsed: parseWebhook({ body: real.body, headers, secret: real.secret }),
  cases: input.cases.map((c) => {
    const r = checkWebhook({ body: c.body, headers: c.header, secret: c.secret, nowSeconds: c.now });
    return r.valid ? "valid" : r.reason;
  }),
};
console.log(JSON.stringify(out));
