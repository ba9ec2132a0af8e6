/**
 * Runs the service in a child process for the crash test, so the parent can
 * `kill -9` it mid-delivery. argv: dataDir orgId apiKey envJson.
 */
import { startTestService } from "./test-service.ts";

const [dataDir, orgId, apiKey, envJson] = process.argv.slice(2);
await startTestService({ dataDir, org: { orgId: orgId!, apiKey: apiKey! }, env: JSON.parse(envJson!) });
console.log("ready");
setInterval(() => {}, 1 << 30);
