"""Focused crawling (issue #7): the driving query, hot pages and their distance, and the
link-metadata relevance scorers (UH, TeH, TiH, AMH, RW, RWB, and the learned ``focus``).
See docs/focused.md."""
