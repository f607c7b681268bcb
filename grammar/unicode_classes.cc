// Placeholder: written by the regex/transforms work of issue 3.
