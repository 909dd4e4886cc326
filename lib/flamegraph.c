#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "fold.h"
#include "profile.h"
#include "query.h"

#define FG_WIDTH 1200
#define FG_FRAME_H 16
#define FG_TOP 72
#define FG_BOTTOM 28
#define FG_MAX_DEPTH 1024
#define FG_KIND_ROOT 10

struct node {
	uint32_t name;   /* label id in fg->labels */
	uint32_t first;  /* first child (0: none; node 0 is the root, never a child) */
	uint32_t next;   /* next sibling */
	uint32_t parent;
	uint8_t kind;
	uint64_t value, base;
};

struct flamegraph {
	struct profile *labels; /* interned frame labels */
	struct node *nodes;
	size_t n, cap;
	uint32_t *slots; /* (parent, name) -> node + 1; open addressing */
	size_t nslots;
	uint64_t total[2];
	/* write(): preorder numbering */
	uint32_t *size;
	uint32_t maxdepth;
};

static uint64_t key_hash(uint32_t parent, uint32_t name)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ULL;

	return h ^ (h >> 29);
}

static int rehash(struct flamegraph *fg)
{
	size_t ns = fg->nslots ? fg->nslots * 2 : 1024;
	uint32_t *s = calloc(ns, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 1; i < fg->n; i++) {
		size_t j = key_hash(fg->nodes[i].parent, fg->nodes[i].name) & (ns - 1);

		while (s[j])
			j = (j + 1) & (ns - 1);
		s[j] = i + 1;
	}
	free(fg->slots);
	fg->slots = s;
	fg->nslots = ns;
	return 0;
}

int flamegraph__new(struct flamegraph **out)
{
	struct flamegraph *fg = calloc(1, sizeof(*fg));
	uint32_t id;
	int err = -ENOMEM;

	if (!fg)
		return -ENOMEM;
	fg->cap = 1024;
	fg->nodes = calloc(fg->cap, sizeof(*fg->nodes));
	if (!fg->nodes || profile__new(&fg->labels))
		goto fail;
	err = profile__intern_str(fg->labels, "all", &id);
	if (err)
		goto fail;
	fg->nodes[0] = (struct node){ .name = id, .kind = FG_KIND_ROOT };
	fg->n = 1;
	err = rehash(fg);
	if (err)
		goto fail;
	*out = fg;
	return 0;
fail:
	flamegraph__free(fg);
	return err;
}

void flamegraph__free(struct flamegraph *fg)
{
	if (!fg)
		return;
	profile__free(fg->labels);
	free(fg->nodes);
	free(fg->slots);
	free(fg->size);
	free(fg);
}

static int child(struct flamegraph *fg, uint32_t parent, const char *label, uint8_t kind, uint32_t *out)
{
	uint32_t name;
	size_t j;
	/* String id 0 is "": the script indexes names by id - 1. */
	int err = profile__intern_str(fg->labels, *label ? label : "[unknown]", &name);

	if (err)
		return err;
	for (j = key_hash(parent, name) & (fg->nslots - 1); fg->slots[j]; j = (j + 1) & (fg->nslots - 1)) {
		struct node *c = &fg->nodes[fg->slots[j] - 1];

		if (c->parent == parent && c->name == name) {
			*out = fg->slots[j] - 1;
			return 0;
		}
	}
	if (fg->n == fg->cap) {
		struct node *nn = realloc(fg->nodes, fg->cap * 2 * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		fg->nodes = nn;
		fg->cap *= 2;
	}
	fg->nodes[fg->n] = (struct node){ .name = name, .parent = parent, .kind = kind,
					  .next = fg->nodes[parent].first };
	fg->nodes[parent].first = fg->n;
	*out = fg->n++;
	if (fg->n * 2 > fg->nslots)
		return rehash(fg);
	fg->slots[j] = *out + 1;
	return 0;
}

int flamegraph__add_stack(struct flamegraph *fg, const char *const *labels, const uint8_t *kinds,
			  uint32_t n, uint64_t value, int base)
{
	uint32_t cur = 0;
	int err;

	base = !!base;
	if (n > FG_MAX_DEPTH)
		n = FG_MAX_DEPTH;
	fg->nodes[0].value += base ? 0 : value;
	fg->nodes[0].base += base ? value : 0;
	fg->total[base] += value;
	for (uint32_t i = 0; i < n; i++) {
		err = child(fg, cur, labels[i], kinds[i], &cur);
		if (err)
			return err;
		if (base)
			fg->nodes[cur].base += value;
		else
			fg->nodes[cur].value += value;
	}
	return 0;
}

uint64_t flamegraph__total(const struct flamegraph *fg, int base)
{
	return fg->total[!!base];
}

int flamegraph__add(struct flamegraph *fg, const struct query *q, const struct profile *c, int base)
{
	const char *labels[FG_MAX_DEPTH];
	uint8_t kinds[FG_MAX_DEPTH];
	char *buf = malloc((size_t)FG_MAX_DEPTH * 512);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < profile__nsamples(c) && !err; i++) {
		const struct pf_sample *s = profile__sample(c, i);
		uint64_t v = fold__printed_value(q, s->value);
		const uint32_t *fr;
		uint32_t nfr, n = 0;

		if (!v)
			continue;
		labels[n] = profile__str(c, s->comm);
		kinds[n++] = FG_KIND_PROCESS;
		if (q->threads) {
			labels[n] = profile__str(c, s->thread);
			kinds[n++] = FG_KIND_THREAD;
		}
		fr = profile__stack(c, s->stack, &nfr);
		for (uint32_t k = 0; k < nfr && n < FG_MAX_DEPTH; k++) {
			char *l = buf + (size_t)n * 512;
			const struct pf_frame *f = profile__frame(c, fr[k]);

			fold__frame_label(c, fr[k], l, 512);
			labels[n] = l;
			kinds[n++] = f ? f->kind : PF_FRAME_USER;
		}
		err = flamegraph__add_stack(fg, labels, kinds, n, v, base);
	}
	free(buf);
	return err;
}

/* ---- output ---- */

static struct flamegraph *sort_fg; /* qsort has no context argument in C11 */

static int child_cmp(const void *a, const void *b)
{
	const struct node *x = &sort_fg->nodes[*(const uint32_t *)a];
	const struct node *y = &sort_fg->nodes[*(const uint32_t *)b];

	return strcmp(profile__str(sort_fg->labels, x->name), profile__str(sort_fg->labels, y->name));
}

/* Re-links every node's children in label order, so the graph reads alphabetically like FlameGraph's. */
static int sort_children(struct flamegraph *fg)
{
	uint32_t *tmp = malloc(fg->n * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	sort_fg = fg;
	for (size_t i = 0; i < fg->n; i++) {
		size_t k = 0;

		for (uint32_t c = fg->nodes[i].first; c; c = fg->nodes[c].next)
			tmp[k++] = c;
		if (k < 2)
			continue;
		qsort(tmp, k, sizeof(*tmp), child_cmp);
		fg->nodes[i].first = tmp[0];
		for (size_t j = 0; j + 1 < k; j++)
			fg->nodes[tmp[j]].next = tmp[j + 1];
		fg->nodes[tmp[k - 1]].next = 0;
	}
	sort_fg = NULL;
	free(tmp);
	return 0;
}

/* Subtree sizes of drawn nodes (value > 0); a side that only the base has is not drawn. */
static uint32_t subtree(struct flamegraph *fg, uint32_t i, uint32_t depth)
{
	uint32_t n = 1;

	if (depth > fg->maxdepth)
		fg->maxdepth = depth;
	for (uint32_t c = fg->nodes[i].first; c; c = fg->nodes[c].next)
		if (fg->nodes[c].value)
			n += subtree(fg, c, depth + 1);
	fg->size[i] = n;
	return n;
}

struct emit {
	FILE *f;
	uint32_t idx;
	double scale; /* base -> value units */
	int diff;
};

static void emit_node(struct flamegraph *fg, struct emit *e, uint32_t i, uint32_t depth, uint64_t start)
{
	const struct node *nd = &fg->nodes[i];
	uint32_t me = e->idx++;

	fprintf(e->f, "%s%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%u", me ? ",\n" : "", nd->name - 1, nd->kind, depth,
		start, nd->value, me + fg->size[i]);
	if (e->diff)
		fprintf(e->f, ",%.2f", nd->base * e->scale);
	for (uint32_t c = nd->first; c; c = fg->nodes[c].next) {
		if (!fg->nodes[c].value)
			continue;
		emit_node(fg, e, c, depth + 1, start);
		start += fg->nodes[c].value;
	}
}

static void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

/* A JSON string that is also safe inside CDATA and a script. */
static void js_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static const char fg_script[] =
"(function () {\n"
"var svg = document.documentElement, NS = 'http://www.w3.org/2000/svg';\n"
"var W = +svg.getAttribute('width'), H = +svg.getAttribute('height');\n"
"var FH = 16, PX = 10, BOTTOM = 28, CW = 7.2;\n"
"var S = DIFF ? 7 : 6, n = F.length / S, total = F[4];\n"
"var frames = document.getElementById('frames'), details = document.getElementById('details');\n"
"var matched = document.getElementById('matched'), reset = document.getElementById('reset');\n"
"var zoom = 0, hits = null, last = '', maxd = 1;\n"
"function g(i, k) { return F[i * S + k]; }\n"
"if (DIFF) for (var i = 0; i < n; i++) maxd = Math.max(maxd, Math.abs(g(i, 4) - g(i, 6)));\n"
"function fmt(v) { return Math.round(v).toString().replace(/\\B(?=(\\d{3})+(?!\\d))/g, ','); }\n"
"function pct(v) { return total ? (100 * v / total).toFixed(2) : '0.00'; }\n"
"function hash(s) { var h = 2166136261; for (var i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0; return (h % 1000) / 1000; }\n"
"function color(i) {\n"
"  if (hits && hits[i]) return 'rgb(230,60,230)';\n"
"  var r = hash(N[g(i, 0)]), k = g(i, 1);\n"
"  if (DIFF) {\n"
"    var d = g(i, 4) - g(i, 6), c = Math.round(255 * (1 - Math.min(1, Math.abs(d) / maxd)));\n"
"    return d > 0 ? 'rgb(255,' + c + ',' + c + ')' : d < 0 ? 'rgb(' + c + ',' + c + ',255)' : 'rgb(250,250,250)';\n"
"  }\n"
"  if (k == 1) return 'hsl(' + Math.round(195 + 30 * r) + ',65%,62%)';\n"   /* kernel: blue */
"  if (k == 2) return 'hsl(' + Math.round(95 + 40 * r) + ',55%,52%)';\n"    /* JIT: green */
"  if (k == 8 || k == 9) return 'hsl(' + Math.round(265 + 25 * r) + ',30%,72%)';\n"
"  if (k == 10) return 'rgb(200,200,200)';\n"
"  return 'hsl(' + Math.round(5 + 45 * r) + ',88%,' + Math.round(55 + 8 * r) + '%)';\n" /* user: warm */
"}\n"
"var KIND = { 0: 'user', 1: 'kernel', 2: 'JIT', 8: 'process', 9: 'thread', 10: 'all' };\n"
"function tip(i) {\n"
"  var v = g(i, 4), t = N[g(i, 0)] + ' (' + KIND[g(i, 1)] + '): ' + fmt(v) + ' ' + UNIT + ', ' + pct(v) + '%';\n"
"  if (DIFF) { var d = v - g(i, 6); t += '; before ' + fmt(g(i, 6)) + ', change ' + (d >= 0 ? '+' : '') + pct(d) + ' points'; }\n"
"  return t;\n"
"}\n"
"function draw(frag, i, x, w, dim) {\n"
"  var y = H - BOTTOM - (g(i, 2) + 1) * FH, e = document.createElementNS(NS, 'g');\n"
"  e.setAttribute('class', dim ? 'f anc' : 'f'); e.setAttribute('data-i', i);\n"
"  var r = document.createElementNS(NS, 'rect');\n"
"  r.setAttribute('x', x.toFixed(1)); r.setAttribute('y', y); r.setAttribute('width', Math.max(w - 0.5, 0.1).toFixed(1));\n"
"  r.setAttribute('height', FH - 1); r.setAttribute('rx', 2); r.setAttribute('fill', color(i)); e.appendChild(r);\n"
"  var room = Math.floor((w - 6) / CW);\n"
"  if (room >= 3) {\n"
"    var s = N[g(i, 0)], l = document.createElementNS(NS, 'text');\n"
"    l.setAttribute('x', (x + 3).toFixed(1)); l.setAttribute('y', y + FH - 4);\n"
"    l.textContent = s.length <= room ? s : s.substring(0, room - 2) + '..'; e.appendChild(l);\n"
"  }\n"
"  frag.appendChild(e);\n"
"}\n"
"function render() {\n"
"  var frag = document.createDocumentFragment(), zs = g(zoom, 3), zv = g(zoom, 4), sc = (W - 2 * PX) / zv, i = 0;\n"
"  while (i < zoom) {\n" /* ancestors of the zoomed frame: full width, dimmed */
"    if (g(i, 5) > zoom) { draw(frag, i, PX, W - 2 * PX, true); i++; } else i = g(i, 5);\n"
"  }\n"
"  for (i = zoom; i < g(zoom, 5);) {\n"
"    var w = g(i, 4) * sc;\n"
"    if (w < 0.4) { i = g(i, 5); continue; }\n" /* too narrow to see: skip the subtree */
"    draw(frag, i, PX + (g(i, 3) - zs) * sc, w, false); i++;\n"
"  }\n"
"  while (frames.firstChild) frames.removeChild(frames.firstChild);\n"
"  frames.appendChild(frag);\n"
"  reset.style.display = zoom ? '' : 'none';\n"
"}\n"
"function search(p) {\n"
"  var re; hits = null; last = p || '';\n"
"  if (!p) { matched.textContent = ''; render(); return null; }\n"
"  try { re = new RegExp(p); } catch (e) { matched.textContent = 'invalid regular expression'; render(); return null; }\n"
"  hits = new Uint8Array(n);\n"
"  for (var i = 1; i < n; i++) if (re.test(N[g(i, 0)])) hits[i] = 1;\n"
"  var sum = 0;\n"
"  for (i = 1; i < n;) { if (hits[i]) { sum += g(i, 4); i = g(i, 5); } else i++; }\n" /* outermost matches only: a subtree counts once */
"  matched.textContent = 'Matched: ' + pct(sum) + '% (' + fmt(sum) + ' of ' + fmt(total) + ' ' + UNIT + ')';\n"
"  matched.setAttribute('data-pct', total ? 100 * sum / total : 0);\n"
"  render(); return 100 * sum / total;\n"
"}\n"
"function ask() { var p = prompt('Search frames (regular expression):', last); if (p !== null) search(p); }\n"
"function at(e) { for (var t = e.target; t && t !== frames; t = t.parentNode) if (t.getAttribute && t.getAttribute('data-i') !== null) return +t.getAttribute('data-i'); return -1; }\n"
"frames.addEventListener('click', function (e) { var i = at(e); if (i >= 0) { zoom = i; render(); } });\n"
/* The native tooltip's <title> is made on first hover: a redraw of thousands of frames stays cheap. */
"frames.addEventListener('mouseover', function (e) {\n"
"  var i = at(e); if (i < 0) return;\n"
"  details.textContent = tip(i);\n"
"  var el = frames.querySelector('.f[data-i=\"' + i + '\"]');\n"
"  if (el && !el.querySelector('title')) { var t = document.createElementNS(NS, 'title'); t.textContent = tip(i); el.insertBefore(t, el.firstChild); }\n"
"});\n"
"frames.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
"reset.addEventListener('click', function () { zoom = 0; render(); });\n"
"document.getElementById('search').addEventListener('click', ask);\n"
"document.getElementById('clear').addEventListener('click', function () { search(''); });\n"
"window.addEventListener('keydown', function (e) {\n"
"  if ((e.ctrlKey && e.key == 'f') || e.key == '/') { e.preventDefault(); ask(); }\n"
"  else if (e.key == 'Escape') { zoom = 0; search(''); }\n"
"});\n"
"window.flamegraph = { search: search, zoom: function (i) { zoom = i; render(); }, nodes: n };\n"
"var q = /[?&]s=([^&]*)/.exec(location.search);\n"
"if (q) search(decodeURIComponent(q[1])); else render();\n"
"})();\n";

int flamegraph__write(struct flamegraph *fg, const struct fg_opts *o, FILE *f)
{
	struct emit e = { .f = f, .diff = fg->total[1] > 0 };
	uint32_t height;
	int err;

	err = sort_children(fg);
	if (err)
		return err;
	free(fg->size);
	fg->size = calloc(fg->n, sizeof(*fg->size));
	if (!fg->size)
		return -ENOMEM;
	fg->maxdepth = 0;
	/* Root value must be set for the scale; an empty graph still draws "all". */
	subtree(fg, 0, 0);
	e.scale = e.diff && fg->total[1] ? (double)fg->total[0] / fg->total[1] : 1;
	height = FG_TOP + (fg->maxdepth + 1) * FG_FRAME_H + FG_BOTTOM;

	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n", FG_WIDTH, height, FG_WIDTH, height);
	fputs("<style>\n"
	      "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
	      "#title { font-size: 17px; }\n#subtitle { fill: #555; }\n"
	      ".btn { cursor: pointer; fill: #1a4d8f; text-decoration: underline; }\n"
	      ".f { cursor: pointer; }\n.f:hover rect { stroke: #000; stroke-width: 0.7; }\n"
	      ".anc rect { opacity: 0.55; }\n#frames text { pointer-events: none; }\n"
	      "</style>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#fdfcf7\"/>\n", FG_WIDTH, height);
	fprintf(f, "<text id=\"title\" x=\"%u\" y=\"24\" text-anchor=\"middle\">", FG_WIDTH / 2);
	xml_text(f, o->title);
	fprintf(f, "</text>\n<text id=\"subtitle\" x=\"%u\" y=\"44\" text-anchor=\"middle\">", FG_WIDTH / 2);
	xml_text(f, o->subtitle);
	if (e.diff)
		fprintf(f, " (red: more than before, blue: less; before scaled to equal totals)");
	fputs("</text>\n", f);
	fputs("<text id=\"reset\" class=\"btn\" x=\"10\" y=\"64\">Reset zoom</text>\n", f);
	fprintf(f, "<text id=\"search\" class=\"btn\" x=\"%u\" y=\"64\" text-anchor=\"end\">Search</text>\n",
		FG_WIDTH - 60);
	fprintf(f, "<text id=\"clear\" class=\"btn\" x=\"%u\" y=\"64\" text-anchor=\"end\">Clear</text>\n",
		FG_WIDTH - 10);
	fprintf(f, "<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"></text>\n", FG_WIDTH - 10,
		height - 10);
	fprintf(f, "<text id=\"details\" x=\"10\" y=\"%u\"> </text>\n", height - 10);
	fputs("<g id=\"frames\"></g>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fprintf(f, "var DIFF = %d, UNIT = ", e.diff);
	js_str(f, o->unit ? o->unit : "samples");
	fputs(";\nvar N = [", f);
	for (size_t i = 1; i < profile__nstrs(fg->labels); i++) {
		if (i > 1)
			fputc(',', f);
		js_str(f, profile__str(fg->labels, i));
	}
	fputs("];\nvar F = [", f);
	emit_node(fg, &e, 0, 0, 0);
	fputs("];\n", f);
	fputs(fg_script, f);
	fputs("]]></script>\n</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
