"""The end-to-end experiments on the Mininet fabric: spraying balance, link
failure, trimming, loss and reordering, against TCP. One script each
(``python -m experiments.<name> --help``); ``make experiments`` runs them all."""
