import { createServer } from "node:net";

/** A TCP port free on loopback now (bound, then released): for ffmpeg listeners playing a platform. */
export async function freeTcpPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
