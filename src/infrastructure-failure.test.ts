import { createClient } from "@libsql/client";
import { describe, expect, test } from "bun:test";
import { S3Client } from "bun";
import { PermanentWorkError } from "./work/work-runner.ts";
import { InfrastructureError, isInfrastructureFailure } from "./infrastructure-failure.ts";

/** What the runner retries without spending an attempt: the real errors of a database, a bucket and a disk that are away or full. */
describe("isInfrastructureFailure", () => {
  test("a database server that does not answer (HTTP and WebSocket)", async () => {
    for (const url of ["http://127.0.0.1:1", "ws://127.0.0.1:1"]) {
      const err = await createClient({ url })
        .execute("SELECT 1")
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(isInfrastructureFailure(err)).toBe(true);
    }
  });

  test("a bucket that does not answer", async () => {
    const s3 = new S3Client({ endpoint: "http://127.0.0.1:1", bucket: "b", accessKeyId: "a", secretAccessKey: "b", region: "us-east-1" });
    const err = await s3.stat("k").then(
      () => null,
      (e: unknown) => e,
    );
    expect(isInfrastructureFailure(err)).toBe(true);
  });

  test("a full disk, as an errno or in ffmpeg's words; a marked error and its causes", () => {
    expect(isInfrastructureFailure(Object.assign(new Error("write"), { code: "ENOSPC" }))).toBe(true);
    expect(isInfrastructureFailure(new Error("segment.ts: No space left on device"))).toBe(true);
    expect(isInfrastructureFailure(new InfrastructureError("away"))).toBe(true);
    expect(isInfrastructureFailure(new Error("outer", { cause: Object.assign(new Error("inner"), { code: "ECONNREFUSED" }) }))).toBe(true);
  });

  test("not the media's failures, a wrong statement, or a permanent error", async () => {
    expect(isInfrastructureFailure(new PermanentWorkError("SOURCE_NOT_FOUND", "The source answered HTTP 404."))).toBe(false);
    expect(isInfrastructureFailure(Object.assign(new Error("ffmpeg failed (exit 1): Invalid data found"), { code: "FFMPEG_FAILED" }))).toBe(false);
    expect(isInfrastructureFailure(new Error("The source answered HTTP 503."))).toBe(false);
    const db = createClient({ url: ":memory:" });
    await db.execute("CREATE TABLE t (a PRIMARY KEY)");
    await db.execute("INSERT INTO t VALUES (1)");
    const err = await db.execute("INSERT INTO t VALUES (1)").then(
      () => null,
      (e: unknown) => e,
    );
    expect(isInfrastructureFailure(err)).toBe(false);
    expect(isInfrastructureFailure(null)).toBe(false);
  });
});
