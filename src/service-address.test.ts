import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "./config.ts";
import { clientServiceUrl, operatorBaseUrl, recordServiceUrl, serviceOrigin } from "./service-address.ts";

const dir = mkdtempSync(join(tmpdir(), "service-address-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("an address with or without the API's base path is the same service", () => {
  for (const given of ["http://localhost:8081", "http://localhost:8081/", "http://localhost:8081/api/public/v1", "http://localhost:8081/api/public/v1/", " http://localhost:8081/api/public/v1// "])
    expect(serviceOrigin(given)).toBe("http://localhost:8081");
  expect(serviceOrigin("https://video.example.com/api/public/v1")).toBe("https://video.example.com");
});

test("client programs: VIDLIVE_API_URL, else what npm start recorded in DATA_DIR, else localhost:PORT or 8080", () => {
  const empty = join(dir, "empty");
  expect(clientServiceUrl({ DATA_DIR: empty })).toBe("http://localhost:8080");
  expect(clientServiceUrl({ DATA_DIR: empty, PORT: "9090" })).toBe("http://localhost:9090");
  recordServiceUrl(dir, "http://127.0.0.1:8181");
  expect(clientServiceUrl({ DATA_DIR: dir })).toBe("http://127.0.0.1:8181");
  expect(clientServiceUrl({ DATA_DIR: dir, VIDLIVE_API_URL: "http://localhost:7070/api/public/v1/" })).toBe("http://localhost:7070");
});

test("the operator CLI's links: its own BASE_URL or PORT when set, else the running service's recorded address", () => {
  recordServiceUrl(dir, "http://127.0.0.1:8181");
  expect(operatorBaseUrl(loadConfig({ DATA_DIR: dir }), { DATA_DIR: dir })).toBe("http://127.0.0.1:8181");
  expect(operatorBaseUrl(loadConfig({ DATA_DIR: dir, PORT: "9191" }), { DATA_DIR: dir, PORT: "9191" })).toBe("http://localhost:9191");
  const env = { DATA_DIR: dir, BASE_URL: "https://video.example.com" };
  expect(operatorBaseUrl(loadConfig(env), env)).toBe("https://video.example.com");
  const fresh = join(dir, "fresh");
  expect(operatorBaseUrl(loadConfig({ DATA_DIR: fresh }), { DATA_DIR: fresh })).toBe("http://localhost:8080");
});

test("rtmp_url's host: RTMP_HOST, else BASE_URL's host name", () => {
  expect(loadConfig({ DATA_DIR: dir }).rtmpHost).toBe("localhost");
  expect(loadConfig({ DATA_DIR: dir, BASE_URL: "https://video.example.com" }).rtmpHost).toBe("video.example.com");
  expect(loadConfig({ DATA_DIR: dir, BASE_URL: "https://video.example.com", RTMP_HOST: "ingest.example.com" }).rtmpHost).toBe("ingest.example.com");
});
