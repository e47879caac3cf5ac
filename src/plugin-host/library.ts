/**
 * Loading a plugin's library in the plugin host, whatever ABI it speaks: the libraries it ships
 * first, from their approved copies, then the library itself from its approved copy. The loader
 * then matches the library's DT_NEEDED to those copies by soname and never opens the files on
 * disk. Its static constructors run here; trust was settled by the parent.
 */
import type { Pointer } from "bun:ffi";
import type { HostStart } from "./start.ts";

export function openLibrary({ libc, settings, refuse, phase }: HostStart): Pointer {
  const { library: path, libraryFd, dependencies } = settings;
  phase("dlopen");
  for (const dependency of dependencies) {
    const loaded = libc.open(`/proc/self/fd/${dependency.fd}`);
    libc.close(dependency.fd);
    if ("error" in loaded) return refuse("load", `cannot load ${dependency.path}, a library the plugin ships, as a shared library: ${loaded.error}`);
  }
  const opened = libc.open(libraryFd === null ? path : `/proc/self/fd/${libraryFd}`);
  if (libraryFd !== null) libc.close(libraryFd);
  if ("error" in opened) return refuse("load", `cannot load ${path} as a shared library: ${opened.error}`);
  return opened.handle;
}
