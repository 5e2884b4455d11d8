-- Version 9: an item's image (a video's still, an episode's artwork) for the reader to show
-- (Media RSS media:thumbnail, itunes:image, JSON Feed image). Absolute https URL or NULL.
ALTER TABLE items ADD COLUMN thumbnail_url TEXT;
