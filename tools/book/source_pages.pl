#!/usr/bin/perl
# source_pages.pl OUT: for each repository path read from standard input,
# the page OUT/src/PATH.html - the file's lines as numbered table rows, each
# with its own anchor (#L12), so that a chapter can link to one line.
# One process writes them all: a few processes per file (sed, awk, mkdir)
# took most of two minutes for 815 files on a machine where starting a
# process costs 4 ms.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Path qw(make_path);

my $out = shift or die "usage: source_pages.pl OUT < paths\n";

sub escape_html {
  my ($text) = @_;
  $text =~ s/&/&amp;/g;
  $text =~ s/</&lt;/g;
  $text =~ s/>/&gt;/g;
  return $text;
}

while (my $path = <STDIN>) {
  chomp $path;
  my $target = "$out/src/$path.html";
  # The way up from the page to the book's root: one ../ per directory.
  my $depth = () = "src/$path" =~ m{/}g;
  my $root = "../" x $depth;
  make_path(dirname($target));
  -f $path or die "book: $path is not a file\n";
  open(my $source, '<', $path) or die "book: cannot read $path: $!\n";
  open(my $page, '>', $target) or die "book: cannot write $target: $!\n";
  print $page "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>$path · normcore</title>";
  print $page "<link rel=\"stylesheet\" href=\"${root}book.css\"></head><body><main><p><a href=\"${root}index.html\">normcore</a></p><h1>$path</h1>\n<table class=\"listing\">\n";
  my $number = 0;
  while (my $line = <$source>) {
    chomp $line;
    $number++;
    print $page "<tr id=\"L$number\"><td class=\"n\"><a href=\"#L$number\">$number</a></td><td>" . escape_html($line) . "</td></tr>\n";
  }
  close($source) or die "book: cannot read $path: $!\n";
  print $page "</table></main></body></html>\n";
  close($page) or die "book: cannot write $target: $!\n";
}
