"""Sessions through git remotes (DESIGN §12): push with its secret scan, pull with verified landing of
remote commits and their blobs."""
