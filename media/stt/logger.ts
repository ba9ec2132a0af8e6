/** The structured logger the service passes in (src/logger); optional everywhere. */
export interface SttLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: SttLogger = { info() {}, warn() {} };
