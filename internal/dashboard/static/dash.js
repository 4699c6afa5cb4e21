// frontier serve: a page follows its server-sent event stream (the body's
// data-events) and puts what changed in place: rows of members and runs
// rendered by the server, and the sections of a run's page. Every piece of
// HTML comes from the server's templates, which escape all text.
(function () {
  "use strict";
  var body = document.body;
  var url = body.dataset.events;
  if (!url || !window.EventSource) {
    return;
  }
  var version = Number(body.dataset.version || 0);
  var badge = document.getElementById("live");

  function show(on) {
    if (!badge) {
      return;
    }
    badge.textContent = on ? "live" : "offline";
    badge.className = on ? "live on" : "live off";
  }

  function fragment(html) {
    var t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content;
  }

  // put replaces the element with id, or inserts the row on top of list.
  function put(id, html, list) {
    var old = document.getElementById(id);
    if (old) {
      old.replaceWith(fragment(html));
      return true;
    }
    if (list) {
      list.insertBefore(fragment(html), list.firstChild);
      return true;
    }
    return false;
  }

  // refresh reads the page again and swaps its main part: for what has no
  // finer event (a bench run, a page that missed events while away).
  function refresh() {
    fetch(location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.querySelector("main");
        var main = document.querySelector("main");
        if (fresh && main) {
          main.replaceWith(fresh);
        }
        var v = doc.body.dataset.version;
        if (v) {
          version = Number(v);
        }
      })
      .catch(function () {});
  }

  var es = new EventSource(url);
  es.addEventListener("open", function () { show(true); });
  es.addEventListener("error", function () { show(false); });
  es.addEventListener("hello", function (e) {
    show(true);
    var d = JSON.parse(e.data);
    if (version && d.version > version) {
      refresh();
    }
  });
  es.addEventListener("member", function (e) {
    var d = JSON.parse(e.data);
    if (location.pathname.endsWith("/members/" + d.id)) {
      refresh(); // this program's own verdict or claim arrived
      return;
    }
    var rows = document.getElementById("member-rows");
    put("m-" + d.id, d.html, rows && rows.dataset.live ? rows : null);
  });
  es.addEventListener("summary", function (e) {
    var d = JSON.parse(e.data);
    Object.keys(d.sections).forEach(function (name) {
      var el = document.querySelector('[data-sec="' + name + '"]');
      if (el) {
        el.innerHTML = d.sections[name];
      }
    });
    version = d.version;
  });
  es.addEventListener("run", function (e) {
    var d = JSON.parse(e.data);
    var list = document.querySelector("#runs tbody");
    if (!put("r-" + d.id, d.html, list)) {
      refresh(); // the first run of an empty store
    }
  });
  es.addEventListener("bench", function () { refresh(); });
})();
