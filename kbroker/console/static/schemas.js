// kbroker console: the Schemas page (/schemas, /schemas/<subject>) over /api/console/schemas*.
// Loaded before app.js, whose helpers (h, api, $, main, every, setMsg) it uses at call time.
"use strict";

function levelCell(level) {
  return level ? h("span", { class: "badge ok" }, level) : h("span", { class: "muted" }, "global");
}

async function pageSchemas() {
  main.replaceChildren(h("h1", {}, "Schemas"), h("div", { id: "schemas-body" }, h("p", { class: "muted" }, "Loading…")));
  const load = async () => {
    const data = await api("/api/console/schemas");
    const body = $("#schemas-body");
    if (!data.enabled) {
      body.replaceChildren(h("div", { class: "panel", id: "schemas-off" }, h("p", {}, data.message)));
      return;
    }
    const rows = data.subjects.map((s) => h("tr", { "data-subject": s.subject },
      h("td", {}, h("a", { href: "/schemas/" + encodeURIComponent(s.subject), "data-link": true }, s.subject)),
      h("td", {}, s.type), h("td", { class: "num" }, s.versions.length),
      h("td", { class: "num" }, s.latest_version), h("td", { class: "num" }, s.latest_id),
      h("td", { class: "level" }, levelCell(s.level))));
    body.replaceChildren(
      h("div", { class: "stats" },
        h("div", { class: "stat" }, h("div", { class: "v", id: "global-level" }, data.global_level), h("div", { class: "k" }, "global compatibility")),
        h("div", { class: "stat" }, h("div", { class: "v", id: "subject-count" }, data.subjects.length), h("div", { class: "k" }, "subjects")),
        h("div", { class: "stat" }, h("div", { class: "v mono" }, data.address), h("div", { class: "k" }, "registry (REST API v1)"))),
      h("div", { class: "panel" }, h("table", { id: "subjects" },
        h("thead", {}, h("tr", {}, h("th", {}, "Subject"), h("th", {}, "Type"), h("th", { class: "num" }, "Versions"),
          h("th", { class: "num" }, "Latest"), h("th", { class: "num" }, "Latest id"), h("th", {}, "Compatibility"))),
        h("tbody", {}, ...(rows.length ? rows : [h("tr", {}, h("td", { colspan: 6, class: "muted" }, "no subjects yet"))])))));
  };
  await load();
  every(5000, load);
}

function diffLines(lines) {
  return lines.map((line) => {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "diff-file"
      : line.startsWith("+") ? "diff-add" : line.startsWith("-") ? "diff-del"
      : line.startsWith("@@") ? "diff-hunk" : "";
    return h("div", { class: cls }, line || " ");
  });
}

async function pageSchema(subject) {
  main.replaceChildren(h("h1", {}, h("a", { href: "/schemas", "data-link": true }, "Schemas"), " / ", subject),
    h("div", { id: "schema-error", class: "msg error" }), h("div", { id: "schema-body" }));
  let s;
  try { s = await api("/api/console/schema?subject=" + encodeURIComponent(subject)); }
  catch (e) { setMsg($("#schema-error"), e.message, false); return; }
  const options = (selected) => s.versions.map((v) => h("option", { value: v.version, selected: v.version === selected }, `v${v.version} (id ${v.id})`));
  const last = s.versions[s.versions.length - 1].version;
  const first = s.versions.length > 1 ? s.versions[s.versions.length - 2].version : last;
  $("#schema-body").replaceChildren(
    h("div", { class: "stats" },
      h("div", { class: "stat" }, h("div", { class: "v", id: "subject-level" }, s.level), h("div", { class: "k" }, "compatibility"),
        h("div", { class: "k", id: "subject-level-source" }, s.level_source === "subject" ? "set on this subject" : "the global level")),
      h("div", { class: "stat" }, h("div", { class: "v" }, s.versions.length), h("div", { class: "k" }, "versions")),
      h("div", { class: "stat" }, h("div", { class: "v" }, s.versions[s.versions.length - 1].type), h("div", { class: "k" }, "type"))),
    h("div", { class: "panel" }, h("h2", {}, "Versions"), h("table", { id: "versions" },
      h("thead", {}, h("tr", {}, h("th", { class: "num" }, "Version"), h("th", { class: "num" }, "Id"), h("th", {}, "Type"), h("th", {}, "References"))),
      h("tbody", {}, ...s.versions.map((v) => h("tr", { "data-version": v.version },
        h("td", { class: "num" }, v.version), h("td", { class: "num" }, v.id), h("td", {}, v.type),
        h("td", {}, v.references.map((r) => `${r.name} → ${r.subject} v${r.version}`).join(", ") || "–")))))),
    h("div", { class: "panel" }, h("h2", {}, "Schema"),
      h("div", { class: "row" }, h("label", {}, "Version", h("select", { id: "show-version" }, ...options(last)))),
      h("pre", { id: "schema-text" })),
    h("div", { class: "panel" }, h("h2", {}, "Diff"),
      h("div", { class: "row" },
        h("label", {}, "From", h("select", { id: "diff-from" }, ...options(first))),
        h("label", {}, "To", h("select", { id: "diff-to" }, ...options(last))),
        h("button", { id: "diff-btn" }, "Compare")),
      h("div", { id: "diff-msg", class: "msg" }),
      h("pre", { id: "diff", class: "diff" })));
  const show = () => {
    const v = s.versions.find((x) => String(x.version) === $("#show-version").value);
    $("#schema-text").textContent = v.pretty;
  };
  const compare = async () => {
    try {
      const d = await api(`/api/console/schema/diff?subject=${encodeURIComponent(subject)}&from=${$("#diff-from").value}&to=${$("#diff-to").value}`);
      setMsg($("#diff-msg"), d.same ? "the two versions are the same schema (same id)" : "", true);
      $("#diff").replaceChildren(...diffLines(d.lines));
    } catch (e) { setMsg($("#diff-msg"), e.message, false); }
  };
  $("#show-version").addEventListener("change", show);
  $("#diff-btn").addEventListener("click", compare);
  show();
  await compare();
}
