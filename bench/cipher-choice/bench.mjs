// Times AES-256-GCM seal+open of 1 KB, 64 KB and 1 MB: the aes-gcm crate
// compiled into wasm (built by `make bench-cipher-choice`) against the
// runtime's Web Crypto (here Node's; workerd's is BoringSSL's, native too),
// and prints the wasm's size with and without the cipher.
import { readFileSync } from "node:fs";
const { instance } = await WebAssembly.instantiate(readFileSync(process.argv[2]), {});
const { seal } = instance.exports;
for (const len of [1024, 65536, 1048576]) {
  const rounds = len > 100000 ? 5 : 50;
  seal(len, 1);
  let t = performance.now();
  seal(len, rounds);
  const wasm = (performance.now() - t) / rounds;
  const key = await crypto.subtle.importKey("raw", new Uint8Array(32).fill(7), "AES-GCM", false, [
    "encrypt",
    "decrypt",
  ]);
  const data = new Uint8Array(len);
  const iv = new Uint8Array(12).fill(1);
  t = performance.now();
  for (let i = 0; i < rounds; i++) {
    const ct = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: new TextEncoder().encode("name") },
      key,
      data,
    );
    await crypto.subtle.decrypt({ name: "AES-GCM", iv, additionalData: new TextEncoder().encode("name") }, key, ct);
  }
  const wc = (performance.now() - t) / rounds;
  console.log(`${len} B seal+open: wasm ${wasm.toFixed(3)} ms, webcrypto ${wc.toFixed(3)} ms`);
}

const { gzipSync } = await import("node:zlib");
for (const file of process.argv.slice(2)) {
  const bytes = readFileSync(file);
  console.log(`${file}: ${bytes.length} bytes, ${gzipSync(bytes, { level: 9 }).length} gzip`);
}
