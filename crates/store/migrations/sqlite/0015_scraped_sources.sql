-- Version 15: scraped sources (F7). A feed row is either a feed document ('feed') or a web page
-- without a feed, read by the scraper of tidings-scrape ('scrape') with its configuration:
-- the JSON of a ScrapeConfig (kind html / nextjs / remix, selectors or key paths, URL prefix).
-- The store keeps both columns in step: scrape_config is set exactly when source_kind is
-- 'scrape'. One URL is one source, as for feeds.
ALTER TABLE feeds ADD COLUMN source_kind TEXT NOT NULL DEFAULT 'feed'
    CHECK (source_kind IN ('feed', 'scrape'));
ALTER TABLE feeds ADD COLUMN scrape_config TEXT;
