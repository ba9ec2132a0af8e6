import { loadConfig } from "./config.ts";
import { createService } from "./service.ts";
import { bootstrapDefaultOrg } from "./orgs/bootstrap.ts";

// Everything the service writes (database, media, uploads, recordings, the key file) is for its own user only.
process.umask(0o077);
const config = loadConfig();
const service = await createService(config);
const boot = await bootstrapDefaultOrg(service.orgs);
await service.listen();
if (boot) {
  // Printed once, on the first start with an empty database: the key is stored only as a hash.
  // On stderr, apart from the JSON logs on stdout (a log collector never stores it), with the next step.
  console.error(
    [
      "",
      `Default organization ${boot.orgId} created. API key (shown once): ${boot.apiKey}`,
      "Next, in another terminal in this folder:",
      `  export VIDLIVE_API_KEY=${boot.apiKey}`,
      "  npm run demo",
      "",
    ].join("\n"),
  );
}
console.error(`API: ${config.baseUrl}/api/public/v1/  Docs: ${config.baseUrl}/openapi`);

let stopping = false;
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    service.logger.info("Shutting down", { signal: sig });
    service.stop().then(
      () => process.exit(0),
      (err) => {
        service.logger.error("Cannot shut down cleanly", { err });
        process.exit(1);
      },
    );
  });
}
