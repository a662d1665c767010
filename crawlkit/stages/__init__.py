"""The stages of a round, as Spark jobs over the crawl directory.

Each module exposes a pure DataFrame -> DataFrame transform (time passed in as ``now``) and
a ``run_*`` function that does the I/O at the edges and returns the stage's counters:

    fetchlist = generate(crawldb, conf, now)
    content   = fetch(fetchlist, conf, now)     # one host per partition, polite per host
    parsed    = parse(content, conf)
    crawldb, links = update(crawldb, links, content, parsed, conf, now)
    scores    = scorer.score(...)               # crawlkit.scoring
"""
