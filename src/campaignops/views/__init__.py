"""Views: the generated Markdown blocks, rebuilt from the campaign's own files."""
