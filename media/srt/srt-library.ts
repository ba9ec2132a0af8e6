import { dlopen, FFIType, ptr, type Pointer } from "bun:ffi";

/**
 * libsrt through `bun:ffi`, no native addon: Debian's ffmpeg pulls in
 * `libsrt-gnutls.so.1.5` (libsrt1.5-gnutls); the OpenSSL build and an
 * unversioned name are tried too. Only the calls the listener needs are
 * bound; every one of them is used non-blocking (SRTO_RCVSYN off), so none
 * ever blocks the event loop.
 */
const NAMES = ["libsrt-gnutls.so.1.5", "libsrt-openssl.so.1.5", "libsrt.so.1.5", "libsrt.so.1", "libsrt.so"];

const { i32, i64, ptr: P, cstring } = FFIType;
const SYMBOLS = {
  srt_startup: { args: [], returns: i32 },
  srt_create_socket: { args: [], returns: i32 },
  srt_bind: { args: [i32, P, i32], returns: i32 },
  srt_listen: { args: [i32, i32], returns: i32 },
  srt_accept: { args: [i32, P, P], returns: i32 },
  srt_close: { args: [i32], returns: i32 },
  srt_getsockname: { args: [i32, P, P], returns: i32 },
  srt_getsockflag: { args: [i32, i32, P, P], returns: i32 },
  srt_setsockflag: { args: [i32, i32, P, i32], returns: i32 },
  srt_getsockstate: { args: [i32], returns: i32 },
  srt_recvmsg: { args: [i32, P, i32], returns: i32 },
  srt_epoll_create: { args: [], returns: i32 },
  srt_epoll_add_usock: { args: [i32, i32, P], returns: i32 },
  srt_epoll_remove_usock: { args: [i32, i32], returns: i32 },
  srt_epoll_uwait: { args: [i32, P, i32, i64], returns: i32 },
  srt_epoll_release: { args: [i32], returns: i32 },
  srt_getlasterror: { args: [P], returns: i32 },
  srt_getlasterror_str: { args: [], returns: cstring },
  srt_setloglevel: { args: [i32], returns: FFIType.void },
} as const;

/** Socket options used here (srt.h, SRT_SOCKOPT). */
export const SRTO = { SNDSYN: 1, RCVSYN: 2, STREAMID: 46 } as const;
/** srt_epoll events (srt.h, SRT_EPOLL_OPT). */
export const SRT_EPOLL = { IN: 0x1, ERR: 0x8 } as const;
/** Error codes (srt.h, SRT_ERRNO): nothing to accept / receive right now. */
export const SRT_EASYNC = { ACCEPT: 6002, RECV: 6002 } as const;
/** SRT_SOCKSTATUS values at and after which a socket is gone. */
export const SRTS_BROKEN = 6;

export type SrtSymbols = ReturnType<typeof open>["symbols"];

function open(name: string) {
  return dlopen(name, SYMBOLS);
}

export interface SrtLibrary {
  name: string;
  fn: SrtSymbols;
  /** The last error's text (srt_getlasterror_str). */
  lastError(): string;
  lastErrorCode(): number;
}

let loaded: SrtLibrary | null | undefined;
let loadError = "";

/** The library, opened once; null (with `srtLoadError()`) when it is not installed. */
export function loadSrt(): SrtLibrary | null {
  if (loaded !== undefined) return loaded;
  const opened = openSrt(NAMES);
  loaded = opened.library;
  loadError = opened.error;
  return loaded;
}

/** Tries each name in turn (uncached): the library, or null and why not. */
export function openSrt(names: readonly string[]): { library: SrtLibrary | null; error: string } {
  const errors: string[] = [];
  for (const name of names) {
    try {
      const lib = open(name);
      if (lib.symbols.srt_startup() < 0) throw new Error("srt_startup failed");
      const fn = lib.symbols;
      // libsrt logs to stderr at error level for routine things ("no pending connection"): critical only.
      fn.srt_setloglevel(2);
      const library: SrtLibrary = {
        name,
        fn,
        lastError: () => String(fn.srt_getlasterror_str() ?? ""),
        lastErrorCode: () => fn.srt_getlasterror(null as unknown as Pointer),
      };
      return { library, error: "" };
    } catch (err) {
      errors.push(`${name}: ${(err as Error).message}`);
    }
  }
  return { library: null, error: errors.join("; ") };
}

export function srtLoadError(): string {
  return loadError;
}

export { ptr };
