"""How every stage reads text: the foundation under ingest, the store, retrieval and the checks.

- ``terms``: a text's terms as Qdrant's English BM25 analyser reads them, and what a word says
  about a question (its rarity in general English, whether it only shapes the question);
- ``term_stats``: a collection's count of the chunks holding each term, and what those counts
  say about a question (its key terms, the words no document holds);
- ``sentences``: one reading of where sentences start and end, for the context's windows, the
  follow-up readings and the answer checks;
- ``words``: whitespace-separated words with their offsets, which chunks and windows are cut on;
- ``locations``: the page or heading a span of a document's text came from;
- ``spelling``: a word typed with a slip, as the gate and the answer checks read it.

It imports no other stage: every stage may read text, and none is needed to do so.
"""
