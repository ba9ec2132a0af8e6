/**
 * A minimal emscripten file system backed by synchronous node:fs calls.
 *
 * Why: the core ships only MEMFS and WORKERFS. MEMFS holds every byte of input
 * and output in the JS heap (~7x the file size in RSS), WORKERFS is read-only.
 * Forwarding each read/write to a real file descriptor keeps the worker's
 * memory flat no matter how big the video is.
 *
 * Runs inside the worker only; it pokes at emscripten's FS internals
 * (createNode, hash table), which are stable across the 3.1.x toolchain that
 * built @ffmpeg/core 0.12.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** The parts of emscripten's FS object this mount relies on. */
export interface EmscriptenFs {
  createNode(parent: EmNode | null, name: string, mode: number, rdev?: number): EmNode;
  lookupNode(parent: EmNode, name: string): EmNode;
  hashRemoveNode(node: EmNode): void;
  isDir(mode: number): boolean;
  isFile(mode: number): boolean;
  isLink(mode: number): boolean;
  mkdir(path: string, mode?: number): unknown;
  mount(type: unknown, opts: { root: string }, mountpoint: string): unknown;
  unmount(mountpoint: string): void;
  ErrnoError: new (errno: number) => Error;
}

export interface EmNode {
  id: number;
  name: string;
  mode: number;
  parent: EmNode;
  mount: { opts: { root: string } };
  node_ops: unknown;
  stream_ops: unknown;
}

interface EmStream {
  node: EmNode;
  flags: number;
  position: number;
  nfd?: number;
}

// emscripten (musl-on-wasm) errno numbers differ from Linux; ffmpeg only sees these.
const EM_ERRNO: Record<string, number> = {
  EACCES: 2,
  EBADF: 8,
  EBUSY: 10,
  EEXIST: 20,
  EFBIG: 22,
  EINVAL: 28,
  EIO: 29,
  EISDIR: 31,
  ELOOP: 32,
  EMFILE: 33,
  ENAMETOOLONG: 37,
  ENOENT: 44,
  ENOSPC: 51,
  ENOTDIR: 54,
  ENOTEMPTY: 55,
  EPERM: 63,
  EROFS: 69,
  EXDEV: 75,
};
const O_ACCMODE = 3;

export function createNodeFsMount(FS: EmscriptenFs) {
  const fail = (e: unknown): never => {
    if (e instanceof FS.ErrnoError) throw e;
    const code = (e as { code?: string } | null)?.code ?? "";
    throw new FS.ErrnoError(EM_ERRNO[code] ?? EM_ERRNO.EIO!);
  };
  const guard = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (e) {
      return fail(e);
    }
  };

  const realPath = (node: EmNode): string => {
    const parts: string[] = [];
    let n = node;
    while (n.parent !== n) {
      parts.push(n.name);
      n = n.parent;
    }
    return path.join(n.mount.opts.root, ...parts.reverse());
  };

  const toStat = (s: fs.Stats) => ({
    dev: s.dev,
    ino: s.ino,
    mode: s.mode,
    nlink: s.nlink,
    uid: s.uid,
    gid: s.gid,
    rdev: s.rdev,
    size: s.size,
    atime: s.atime,
    mtime: s.mtime,
    ctime: s.ctime,
    blksize: s.blksize,
    blocks: s.blocks,
  });

  const mountType = {
    mount(mount: { opts: { root: string } }): EmNode {
      const mode = guard(() => fs.statSync(mount.opts.root).mode);
      if (!FS.isDir(mode)) throw new FS.ErrnoError(EM_ERRNO.ENOTDIR!);
      return createNode(null, "/", mode);
    },
  };

  const nodeOps = {
    getattr: (node: EmNode) => guard(() => toStat(fs.lstatSync(realPath(node)))),
    setattr(node: EmNode, attr: { mode?: number; timestamp?: number; size?: number }) {
      const p = realPath(node);
      guard(() => {
        if (attr.mode !== undefined) {
          fs.chmodSync(p, attr.mode);
          node.mode = attr.mode;
        }
        if (attr.timestamp !== undefined) {
          const d = new Date(attr.timestamp);
          fs.utimesSync(p, d, d);
        }
        if (attr.size !== undefined) fs.truncateSync(p, attr.size);
      });
    },
    lookup(parent: EmNode, name: string): EmNode {
      const mode = guard(() => fs.lstatSync(path.join(realPath(parent), name)).mode);
      return createNode(parent, name, mode);
    },
    mknod(parent: EmNode, name: string, mode: number): EmNode {
      const p = path.join(realPath(parent), name);
      guard(() => {
        if (FS.isDir(mode)) fs.mkdirSync(p, { mode: mode & 0o7777 });
        else fs.writeFileSync(p, "", { mode: mode & 0o7777 });
      });
      return createNode(parent, name, mode);
    },
    rename(oldNode: EmNode, newDir: EmNode, newName: string) {
      const from = realPath(oldNode);
      const to = path.join(realPath(newDir), newName);
      guard(() => fs.renameSync(from, to));
      // emscripten's FS.rename leaves a replaced target in its name cache;
      // drop it so later lookups see the renamed node (ffmpeg's hls muxer
      // writes playlists as *.tmp and renames them over the old ones).
      try {
        const replaced = FS.lookupNode(newDir, newName);
        if (replaced !== oldNode) FS.hashRemoveNode(replaced);
      } catch {
        // nothing was there
      }
      oldNode.name = newName;
      oldNode.parent = newDir;
    },
    unlink: (parent: EmNode, name: string) => guard(() => fs.unlinkSync(path.join(realPath(parent), name))),
    rmdir: (parent: EmNode, name: string) => guard(() => fs.rmdirSync(path.join(realPath(parent), name))),
    readdir: (node: EmNode) => [".", "..", ...guard(() => fs.readdirSync(realPath(node)))],
    symlink: (parent: EmNode, newName: string, oldPath: string) => guard(() => fs.symlinkSync(oldPath, path.join(realPath(parent), newName))),
    readlink: (node: EmNode) => guard(() => fs.readlinkSync(realPath(node))),
  };

  const streamOps = {
    open(stream: EmStream) {
      if (!FS.isFile(stream.node.mode)) return;
      // Creation and truncation were already done by FS.open via mknod/setattr;
      // only the access mode matters here.
      stream.nfd = guard(() => fs.openSync(realPath(stream.node), stream.flags & O_ACCMODE));
    },
    close(stream: EmStream) {
      if (stream.nfd !== undefined) guard(() => fs.closeSync(stream.nfd!));
      stream.nfd = undefined;
    },
    read(stream: EmStream, buffer: Uint8Array, offset: number, length: number, position: number): number {
      if (length === 0) return 0;
      return guard(() => fs.readSync(stream.nfd!, buffer, offset, length, position));
    },
    write(stream: EmStream, buffer: Uint8Array, offset: number, length: number, position: number): number {
      if (length === 0) return 0;
      return guard(() => fs.writeSync(stream.nfd!, buffer, offset, length, position));
    },
    llseek(stream: EmStream, offset: number, whence: number): number {
      let position = offset;
      if (whence === 1) position += stream.position;
      else if (whence === 2 && FS.isFile(stream.node.mode)) position += guard(() => fs.fstatSync(stream.nfd!).size);
      if (position < 0) throw new FS.ErrnoError(EM_ERRNO.EINVAL!);
      return position;
    },
  };

  function createNode(parent: EmNode | null, name: string, mode: number): EmNode {
    if (!FS.isDir(mode) && !FS.isFile(mode) && !FS.isLink(mode)) throw new FS.ErrnoError(EM_ERRNO.EINVAL!);
    const node = FS.createNode(parent, name, mode);
    node.node_ops = nodeOps;
    node.stream_ops = streamOps;
    return node;
  }

  return mountType;
}

/** Mounts host directory `root` at `mountpoint` inside the core's FS. */
export function mountHostDir(FS: EmscriptenFs, fsType: unknown, root: string, mountpoint: string): void {
  try {
    FS.mkdir(mountpoint);
  } catch {
    // already exists from a previous job on this core
  }
  FS.mount(fsType, { root }, mountpoint);
}
