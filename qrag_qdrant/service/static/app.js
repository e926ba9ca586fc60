// The page talks to the same API as everyone else: POST /v1/query with stream: true (Server-Sent
// Events: evidence, then answer tokens, then done) and POST /v1/feedback. No libraries, no CDN.
// The conversation lives here, in the page: each question is sent with the earlier turns as
// history, so a follow-up is searched as the stand-alone question the evidence's searched_for shows.
"use strict";

const $ = (id) => document.getElementById(id);
const keyInput = $("key");
keyInput.value = sessionStorage.getItem("qrag-key") || "";
let queryId = null;
// the earlier turns, oldest first, as POST /v1/query's history takes them
let conversation = [];
// turns sent with a question: the service reads only the most recent ones
const HISTORY_TURNS = 20;

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

function headers() {
  return { "Content-Type": "application/json", "Authorization": "Bearer " + keyInput.value.trim() };
}

async function errorMessage(response) {
  try {
    const body = await response.json();
    return body.message || response.statusText;
  } catch (_) {
    return response.statusText;
  }
}

function renderEvidence(evidence) {
  const list = $("clusters");
  list.replaceChildren();
  // how much evidence the model read, and why (retrieval.context)
  $("context").textContent = evidence.context_policy
    ? `${evidence.context_words} words sent to the model (${evidence.context_policy})` : "";
  for (const cluster of evidence.clusters) {
    const item = element("li", "cluster");
    item.append(element("span", "support", `${cluster.support}/${evidence.retrievers} retrievers`), " ",
                element("span", "retrievers", cluster.retrievers.join(", ")));
    if (cluster.expansions && cluster.expansions.length) {  // retrieval.expansions: rank, not support
      item.append(" ", element("span", "expansions", `also found by ${cluster.expansions.join(", ")}`));
    }
    for (const passage of cluster.passages) {
      const block = element("div", "passage");
      block.id = `passage-${passage.citation}`;
      block.dataset.citation = passage.citation;
      const byline = [passage.publisher, (passage.published || "").slice(0, 10)].filter(Boolean).join(", ");
      block.append(element("div", "source", `[${passage.citation}] ${passage.location}${byline ? ` (${byline})` : ""}`),
                   element("div", "text", passage.text));
      item.append(block);
    }
    list.append(item);
  }
}

// The sentence a mark rests on, highlighted in its passage: the supporting sentence, and for an
// ambiguous answer the rival sentence beside it.
function highlight(citation, sentence, className) {
  const block = document.querySelector(`#passage-${citation} .text`);
  if (!block || !sentence) return;
  // only plain text is split, so a sentence highlighted before keeps its mark
  for (const node of block.childNodes) {
    if (node.nodeType !== Node.TEXT_NODE) continue;
    const at = node.data.indexOf(sentence);
    if (at < 0) continue;
    const rest = node.splitText(at);
    rest.splitText(sentence.length);
    rest.replaceWith(element("mark", className, sentence));
    return;
  }
}

// rivals are looked for in the passages a claim cites: the first of them that holds the sentence
function highlightAnywhere(citations, sentence, className) {
  for (const citation of citations) {
    const block = document.querySelector(`#passage-${citation} .text`);
    if (block && block.textContent.includes(sentence)) return highlight(citation, sentence, className);
  }
}

const MARK_LABELS = {
  "supported": "Supported",
  "not supported": "Not supported",
  "ambiguous": "Ambiguous",
  "declined": "Declined",
  "no evidence": "No evidence",
  "clarifying question": "Which did you mean?",
};

// The answer's mark, in words, as every interface gives it (Answer.mark and mark_reason).
function renderMark(done) {
  const mark = $("mark");
  mark.hidden = !done.mark || done.mark === "clarifying question";
  mark.className = done.mark ? "mark-" + done.mark.replace(/ /g, "-") : "";
  mark.querySelector(".label").textContent = done.mark ? MARK_LABELS[done.mark] + ":" : "";
  mark.querySelector(".reason").textContent = done.mark_reason || "";
  for (const claim of done.claims || []) {
    if (claim.sentence && claim.citations.length) {
      highlightAnywhere(claim.citations, claim.sentence, claim.supported ? "supporting" : "holding");
    }
    if (claim.rival) highlightAnywhere(claim.citations, claim.rival, "rival");
  }
}

// A question back: the two readings of the follow-up, either sent as the next question.
function renderClarification(clarification) {
  const box = $("clarify");
  box.hidden = !clarification;
  if (!clarification) return;
  box.querySelector(".question").textContent = clarification.question;
  box.querySelector(".readings").replaceChildren(...clarification.readings.map((reading) => {
    const button = element("button", "reading", reading);
    button.type = "button";
    button.addEventListener("click", () => { $("question").value = reading; ask(reading); });
    return button;
  }));
}

// The answer's [n] become links to passage n; the cited passages are highlighted.
function renderAnswer(text, shown) {
  const answer = $("answer");
  answer.replaceChildren();
  const cited = new Set();
  let last = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    const number = Number(match[1]);
    answer.append(text.slice(last, match.index));
    if (shown.has(number)) {
      const link = element("a", "cite", match[0]);
      link.href = `#passage-${number}`;
      answer.append(link);
      cited.add(number);
    } else {
      answer.append(match[0]);
    }
    last = match.index + match[0].length;
  }
  answer.append(text.slice(last));
  for (const block of document.querySelectorAll(".passage")) {
    block.classList.toggle("cited", cited.has(Number(block.dataset.citation)));
  }
}

const ABSTAINED = {
  no_quorum: "No answer: the retrievers did not agree on any evidence.",
  low_confidence: "No answer: the evidence the retrievers agreed on is too weak to answer from.",
  model_declined: "No answer: the passages do not hold the answer.",
  unsupported_answer: "No answer: the answer was withheld; the evidence follows.",
  needs_clarification: "",
};

function finish(done) {
  const shown = new Set(done.clusters.flatMap((c) => c.passages.map((p) => p.citation)));
  $("answer").classList.toggle("abstained", done.abstained);
  if (done.clarification) {
    $("answer").textContent = "";  // the question back is the box below, with a button per reading
  } else if (done.abstained) {
    $("answer").textContent = answerText(done);
  } else {
    renderAnswer(done.answer || "", shown);
  }
  renderMark(done);
  renderClarification(done.clarification);
  const agreement = done.agreement;  // generation.samples: how many readings of the prompt gave this answer
  $("agreement").hidden = !agreement;
  $("agreement").textContent = agreement ? `${agreement.agreeing} of ${agreement.readings} readings agree` : "";
  const warnings = $("warnings");
  warnings.replaceChildren(...(done.warnings || []).map((w) => element("li", "", w)));
  if (done.computed) warnings.prepend(element("li", "", "computed " + done.computed));
  if (done.error) warnings.append(element("li", "", "error: " + done.error));
  $("feedback").hidden = false;
  setStatus("");
}

// The earlier turns, shown above the current answer, each answer with its mark.
function renderConversation() {
  $("conversation").replaceChildren(...conversation.map((turn) => {
    const item = element("li", turn.role, `${turn.role === "user" ? "You" : "Answer"}: ${turn.content}`);
    if (turn.mark) item.append(" ", element("span", "turn-mark mark-" + turn.mark.replace(/ /g, "-"), MARK_LABELS[turn.mark]));
    return item;
  }));
}

// What the assistant said, as the next question's history holds it.
function answerText(done) {
  if (done.clarification) return done.clarification.question;
  const gap = (done.parts || []).find((part) => part.missing);  // a question of several parts, one without evidence
  if (done.abstain_reason === "part_missing" && gap) return `No answer: a part of the question has no evidence: ${gap.missing}.`;
  return done.abstained ? (ABSTAINED[done.abstain_reason] || "No answer.") : (done.answer || "");
}

$("new-conversation").addEventListener("click", () => {
  conversation = [];
  renderConversation();
  $("result").hidden = true;
  setStatus("New conversation.");
  $("question").focus();
});

// Server-Sent Events from a POST: fetch's body stream, split into events at blank lines.
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const name = (raw.match(/^event: (.*)$/m) || [])[1];
      const data = (raw.match(/^data: (.*)$/m) || [])[1];
      if (name && data !== undefined) yield [name, JSON.parse(data)];
    }
  }
}

$("ask").addEventListener("submit", (event) => {
  event.preventDefault();
  ask($("question").value);
});

// "Searched for" undone: the same question again, searched as typed, without the conversation.
$("search-as-typed").addEventListener("click", () => ask($("asked").textContent, { alone: true }));

async function ask(question, options = {}) {
  if (!sessionStorage.getItem("qrag-token")) sessionStorage.setItem("qrag-key", keyInput.value.trim());
  $("submit").disabled = true;
  renderConversation();
  $("result").hidden = true;
  $("feedback").hidden = true;
  $("feedback-status").textContent = "";
  document.querySelectorAll("#feedback button").forEach((b) => { b.disabled = false; b.classList.remove("chosen"); });
  setStatus("Searching…");
  const history = options.alone ? [] : conversation.slice(-HISTORY_TURNS).map(({ role, content }) => ({ role, content }));
  try {
    const response = await fetch("/v1/query", {
      method: "POST", headers: headers(),
      body: JSON.stringify({ question, history, stream: true }),
    });
    if (!response.ok) throw new Error(await errorMessage(response));
    let text = "";
    for await (const [name, data] of events(response)) {
      if (name === "evidence") {
        queryId = data.query_id;
        $("asked").textContent = question;
        const rewritten = data.searched_for && data.searched_for !== data.question;
        $("searched-for").hidden = !rewritten;
        $("searched-for").querySelector("span").textContent = rewritten ? `searched for: ${data.searched_for} ` : "";
        $("answer").textContent = "";
        $("answer").classList.remove("abstained");
        $("mark").hidden = true;
        $("clarify").hidden = true;
        $("warnings").replaceChildren();
        renderEvidence(data);
        $("result").hidden = false;
        setStatus(data.abstained ? "" : "Answering…");
      } else if (name === "loading") {  // the first answer of the service waits for its model
        setStatus(data.message + "…");
      } else if (name === "token") {
        text += data.text;
        $("answer").textContent = text;
      } else if (name === "done") {
        finish(data);
        conversation.push({ role: "user", content: question },
                          { role: "assistant", content: answerText(data), mark: data.mark });
        $("question").value = "";
      }
    }
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    $("submit").disabled = false;
  }
}

for (const button of document.querySelectorAll("#feedback button")) {
  button.addEventListener("click", async () => {
    const response = await fetch("/v1/feedback", {
      method: "POST", headers: headers(),
      body: JSON.stringify({ query_id: queryId, rating: button.dataset.rating }),
    });
    if (response.ok) {
      button.classList.add("chosen");
      document.querySelectorAll("#feedback button").forEach((b) => { b.disabled = true; });
      $("feedback-status").textContent = "Thanks: recorded.";
    } else {
      $("feedback-status").textContent = await errorMessage(response);
    }
  });
}

// The documents panel: GET /v1/documents a page at a time; a read-write key also removes
// (DELETE /v1/documents/{source}) and uploads (POST /v1/ingest, then its job is followed).
const PAGE = 100;
let documentsShown = 0;

function documentsStatus(text, isError) {
  $("documents-status").textContent = text;
  $("documents-status").className = isError ? "error" : "";
}

async function loadDocuments(append) {
  const offset = append ? documentsShown : 0;
  const response = await fetch(`/v1/documents?offset=${offset}&limit=${PAGE}`, { headers: headers() });
  if (!response.ok) return documentsStatus(await errorMessage(response), true);
  const page = await response.json();
  const body = $("documents-table").querySelector("tbody");
  if (!append) body.replaceChildren();
  for (const doc of page.documents) {
    const row = element("tr");
    row.dataset.source = doc.source;
    const when = doc.ingested_at ? doc.ingested_at.slice(0, 16).replace("T", " ") : "";
    row.append(element("td", "source", doc.source), element("td", "size", String(doc.size)), element("td", "", when));
    const cell = element("td");
    if (page.can_remove) {
      const remove = element("button", "remove", "Remove");
      remove.type = "button";
      remove.addEventListener("click", () => removeDocument(doc.source));
      cell.append(remove);
    }
    row.append(cell);
    body.append(row);
  }
  documentsShown = offset + page.documents.length;
  $("documents-more").hidden = documentsShown >= page.total;
  $("upload").hidden = !page.can_remove;
  documentsStatus(`${page.total} document${page.total === 1 ? "" : "s"}`);
}

async function removeDocument(source) {
  if (!window.confirm(`Remove ${source} from every collection?`)) return;
  const response = await fetch(`/v1/documents/${source.split("/").map(encodeURIComponent).join("/")}`,
                               { method: "DELETE", headers: headers() });
  if (!response.ok) return documentsStatus(await errorMessage(response), true);
  await loadDocuments(false);
  documentsStatus(`Removed ${source}. ${$("documents-status").textContent}`);
}

async function upload() {
  const files = $("upload-files").files;
  if (!files.length) return documentsStatus("Choose one or more files first.", true);
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  documentsStatus("Uploading…");
  const auth = { "Authorization": headers().Authorization };
  let response = await fetch("/v1/ingest", { method: "POST", headers: auth, body: form });
  if (!response.ok) return documentsStatus(await errorMessage(response), true);
  let job = await response.json();
  while (job.state === "queued" || job.state === "running") {
    documentsStatus(`Ingesting: ${job.files_done || 0} of ${job.files_total || files.length} files…`);
    await new Promise((resolve) => setTimeout(resolve, 500));  // the job's progress, polled
    response = await fetch(`/v1/jobs/${job.id}`, { headers: auth });
    if (!response.ok) return documentsStatus(await errorMessage(response), true);
    job = await response.json();
  }
  if (job.state !== "done") return documentsStatus(`Ingest ${job.state}: ${job.error || ""}`, true);
  $("upload-files").value = "";
  await loadDocuments(false);
}

$("documents").addEventListener("toggle", () => { if ($("documents").open) loadDocuments(false); });
$("documents-more").addEventListener("click", () => loadDocuments(true));
$("upload-submit").addEventListener("click", upload);

// Sign-in through the company's identity provider, when the service has service.oidc.client_id: the
// authorization code flow with PKCE (S256). The access token is kept for this tab only
// (sessionStorage) and sent as the bearer, as a key is.
let signIn = null;

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function provider() {
  const response = await fetch(signIn.issuer.replace(/\/$/, "") + "/.well-known/openid-configuration");
  if (!response.ok) throw new Error("the identity provider did not answer (HTTP " + response.status + ")");
  return response.json();
}

async function startSignIn() {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem("qrag-pkce", JSON.stringify({ verifier, state }));
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const query = new URLSearchParams({
    response_type: "code", client_id: signIn.client_id, redirect_uri: location.origin + "/", scope: signIn.scope,
    state, code_challenge: challenge, code_challenge_method: "S256",
  });
  location.assign((await provider()).authorization_endpoint + "?" + query);
}

async function finishSignIn(reply) {
  const pending = JSON.parse(sessionStorage.getItem("qrag-pkce") || "null");
  sessionStorage.removeItem("qrag-pkce");
  history.replaceState(null, "", "/");  // the code is used once, and not left in the address bar
  if (reply.get("error")) throw new Error("sign-in refused: " + (reply.get("error_description") || reply.get("error")));
  if (!pending || reply.get("state") !== pending.state) throw new Error("sign-in failed: the reply does not match the request");
  const response = await fetch((await provider()).token_endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code", code: reply.get("code"), redirect_uri: location.origin + "/",
      client_id: signIn.client_id, code_verifier: pending.verifier,
    }),
  });
  const tokens = await response.json();
  if (!response.ok || !tokens.access_token) throw new Error("sign-in failed: " + (tokens.error_description || tokens.error || response.status));
  sessionStorage.setItem("qrag-token", tokens.access_token);
}

function showSignIn() {
  const token = sessionStorage.getItem("qrag-token");
  let subject = "";
  try { subject = token ? JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub : ""; } catch { subject = ""; }
  $("sign-in-row").hidden = false;
  $("sign-in").textContent = token ? "Sign out" : "Sign in";
  $("signed-in-as").textContent = token ? "signed in as " + subject : "or use a team key:";
  $("key-label").hidden = keyInput.hidden = Boolean(token);
  keyInput.value = token || sessionStorage.getItem("qrag-key") || "";
}

$("sign-in").addEventListener("click", () => {
  if (sessionStorage.getItem("qrag-token")) {
    sessionStorage.removeItem("qrag-token");
    showSignIn();
  } else {
    startSignIn().catch((error) => setStatus(error.message, true));
  }
});

(async () => {
  const response = await fetch("/sign-in.json");
  if (!response.ok) return;  // keys only
  signIn = await response.json();
  const reply = new URLSearchParams(location.search);
  if (reply.has("code") || reply.has("error")) await finishSignIn(reply).catch((error) => setStatus(error.message, true));
  showSignIn();
})();
