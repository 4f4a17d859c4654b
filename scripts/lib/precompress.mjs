// Writes a brotli (.br) copy beside every file under the directories given, as cargo-leptos
// --precompress did: the server sends it as it is to browsers that accept brotli. Quality 11
// with a 4 MiB window are brotli's defaults. (The .gz copies are gzip -9's, in build-site.sh.)
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants } from "node:zlib";

function compressAll(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      compressAll(path);
    } else if (entry.isFile() && !/\.(br|gz)$/.test(entry.name)) {
      const data = readFileSync(path);
      const compressed = brotliCompressSync(data, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: 11,
          [constants.BROTLI_PARAM_LGWIN]: 22,
          [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
        },
      });
      writeFileSync(`${path}.br`, compressed);
    }
  }
}

for (const dir of process.argv.slice(2)) compressAll(dir);
