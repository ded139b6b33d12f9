// placeholder until the filters module lands; replaced by its first source.
