// Drives a flame graph SVG in headless Chromium over the DevTools protocol
// (--remote-debugging-pipe: no npm packages, no network): loads the file,
// takes a screenshot, clicks "Search" and answers its prompt with a regex
// like a user would, reads back the matched percentage, then clicks a frame
// to zoom and checks it spans the width and "Reset zoom" shows.
// Usage: node flamegraph.mjs FILE.svg REGEX SCREENSHOT.png
// Prints one JSON object: { matched, pct, zoomWidthRatio, resetShown, frames, hover, hoverTitle,
// loadMs, searchMs, zoomMs } (times as seen from outside the page, for benchmarks).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const [svg, regex, shot] = process.argv.slice(2);
const chrome = spawn(process.env.CHROMIUM || '/usr/bin/chromium', [
  '--headless', '--no-sandbox', '--disable-gpu', '--remote-debugging-pipe',
  '--window-size=1200,900', '--no-first-run', 'about:blank',
], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
const timer = setTimeout(() => { console.error('flamegraph.mjs: timed out'); chrome.kill(); process.exit(1); }, 40000);

let nextId = 1, buf = '';
const waiting = new Map(), listeners = [];
chrome.stdio[4].on('data', (d) => {
  buf += d.toString();
  let i;
  while ((i = buf.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    if (msg.id && waiting.has(msg.id)) {
      const { ok, fail } = waiting.get(msg.id);
      waiting.delete(msg.id);
      msg.error ? fail(new Error(JSON.stringify(msg.error))) : ok(msg.result);
    } else if (msg.method) {
      for (const l of listeners.slice()) l(msg);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  chrome.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + '\0');
  return new Promise((ok, fail) => waiting.set(id, { ok, fail }));
}
function once(method) {
  return new Promise((ok) => {
    const l = (m) => { if (m.method === method) { listeners.splice(listeners.indexOf(l), 1); ok(m.params); } };
    listeners.push(l);
  });
}

const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
const s = (m, p) => send(m, p, sessionId);
const js = async (expr) => (await s('Runtime.evaluate', { expression: expr, returnByValue: true })).result.value;
async function click(x, y) {
  for (const type of ['mouseMoved', 'mousePressed', 'mouseReleased'])
    await s('Input.dispatchMouseEvent', { type, x, y, button: type === 'mouseMoved' ? 'none' : 'left', clickCount: 1 });
}
const center = (sel) => js(`(() => { const r = document.querySelector(${JSON.stringify(sel)}).getBoundingClientRect();
  return [r.x + r.width / 2, r.y + r.height / 2, r.width]; })()`);

await s('Page.enable');
await s('Runtime.enable');
const loaded = once('Page.loadEventFired');
let t0 = performance.now();
await s('Page.navigate', { url: 'file://' + resolve(svg) });
await loaded;
await js('0'); // the page answers: its load handler has drawn the graph
const loadMs = performance.now() - t0;

const out = { frames: await js("document.querySelectorAll('#frames .f').length"), loadMs };
writeFileSync(shot, Buffer.from((await s('Page.captureScreenshot', { format: 'png' })).data, 'base64'));

// Hover: the details line and the native tooltip name the frame under the pointer.
{
  const [hx, hy] = await center('#frames .f[data-i="0"] rect');
  await s('Input.dispatchMouseEvent', { type: 'mouseMoved', x: hx, y: hy, button: 'none' });
  out.hover = await js("document.getElementById('details').textContent");
  out.hoverTitle = await js(`(document.querySelector('#frames .f[data-i="0"] title') || {}).textContent || ''`);
}

// Search like a user: click the Search button, type the regex into the prompt.
const dialog = once('Page.javascriptDialogOpening');
const [sx, sy] = await center('#search');
const clicked = click(sx, sy);
await dialog;
t0 = performance.now();
await s('Page.handleJavaScriptDialog', { accept: true, promptText: regex });
await clicked;
await js('0');
out.searchMs = performance.now() - t0;
out.matched = await js("document.getElementById('matched').textContent");
out.pct = Number(await js("document.getElementById('matched').getAttribute('data-pct')"));
out.highlighted = await js("[...document.querySelectorAll('#frames rect')].filter(r => r.getAttribute('fill') === 'rgb(230,60,230)').length");

// Zoom: click the widest frame two levels up from the root; it then spans the graph.
const target = await js(`(() => { let best = null, bw = 0;
  for (const g of document.querySelectorAll('#frames .f')) {
    const r = g.querySelector('rect'), w = +r.getAttribute('width');
    if (+r.getAttribute('y') < ${'+document.documentElement.getAttribute("height") - 28 - 2 * 16'} && w < 1100 && w > bw) { bw = w; best = g.getAttribute('data-i'); }
  }
  return best; })()`);
if (target !== null) {
  const [zx, zy] = await center(`#frames .f[data-i="${target}"] rect`);
  t0 = performance.now();
  await click(zx, zy);
  await js('0');
  out.zoomMs = performance.now() - t0;
  const [, , w] = await center(`#frames .f[data-i="${target}"] rect`);
  const [, , full] = await center('#frames .f[data-i="0"] rect');
  out.zoomWidthRatio = w / full;
  out.resetShown = await js("getComputedStyle(document.getElementById('reset')).display !== 'none'");
  writeFileSync(shot.replace(/\.png$/, '-zoomed.png'), Buffer.from((await s('Page.captureScreenshot', { format: 'png' })).data, 'base64'));
}
console.log(JSON.stringify(out));
clearTimeout(timer);
await send('Browser.close').catch(() => {});
chrome.kill();
process.exit(0);
