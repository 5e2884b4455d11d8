-- A bookmark keeps its item's language with the rest of its snapshot (issue 37), so that the
-- bookmarks page sets `lang` on its text (fonts, hyphenation and screen readers) even once
-- the item is gone. Bookmarks made before this take their item's language while it exists;
-- those without an item (imported from another reader, or whose item was deleted) stay
-- without one.
ALTER TABLE bookmarks ADD COLUMN language TEXT;
UPDATE bookmarks SET language = (SELECT i.language FROM items i WHERE i.id = bookmarks.item_id)
    WHERE item_id IS NOT NULL;
