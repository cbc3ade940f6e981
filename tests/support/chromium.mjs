// The headless Chromium the browser suites drive (Debian's, installed by
// scripts/install.sh chromium), launched as each of them needs it: offline
// (no background networking, no QUIC), no sandbox (CI runs as root).
import { chromium } from "playwright-core";

/** The browser, launched. */
export function launchChromium() {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic"],
  });
}
