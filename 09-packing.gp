$A << EOD
0 0 0 0
0 1 0 1
0 2 0 2
1 0 0 3
1 1 0 4
1 2 0 5
2 0 0 6
2 1 0 7
2 2 0 8
3 0 0 9
3 1 0 10
3 2 0 11
4 0 0 12
4 1 0 13
4 2 0 14
5 0 0 15
5 1 0 16
5 2 0 17
6 0 0 18
6 1 0 19
6 2 0 20
7 0 0 21
7 1 0 22
7 2 0 23
0 3 1 24
0 4 1 25
0 5 1 26
1 3 1 27
1 4 1 28
1 5 1 29
2 3 1 30
2 4 1 31
2 5 1 32
3 3 1 33
3 4 1 34
3 5 1 35
4 3 1 36
4 4 1 37
4 5 1 38
5 3 1 39
5 4 1 40
5 5 1 41
6 3 1 42
6 4 1 43
6 5 1 44
7 3 1 45
7 4 1 46
7 5 1 47
EOD
$B << EOD
0 0 0 0
1 0 0 1
2 0 0 2
3 0 0 3
0 1 0 4
1 1 0 5
2 1 0 6
3 1 0 7
0 2 0 8
1 2 0 9
2 2 0 10
3 2 0 11
0 3 0 12
1 3 0 13
2 3 0 14
3 3 0 15
0 4 0 16
1 4 0 17
2 4 0 18
3 4 0 19
0 5 0 20
1 5 0 21
2 5 0 22
3 5 0 23
0 6 0 24
1 6 0 25
2 6 0 26
3 6 0 27
0 7 0 28
1 7 0 29
2 7 0 30
3 7 0 31
4 0 1 32
5 0 1 33
6 0 1 34
7 0 1 35
4 1 1 36
5 1 1 37
6 1 1 38
7 1 1 39
4 2 1 40
5 2 1 41
6 2 1 42
7 2 1 43
4 3 1 44
5 3 1 45
6 3 1 46
7 3 1 47
4 4 1 48
5 4 1 49
6 4 1 50
7 4 1 51
4 5 1 52
5 5 1 53
6 5 1 54
7 5 1 55
4 6 1 56
5 6 1 57
6 6 1 58
7 6 1 59
4 7 1 60
5 7 1 61
6 7 1 62
7 7 1 63
8 0 2 64
9 0 2 65
10 0 2 66
11 0 2 67
8 1 2 68
9 1 2 69
10 1 2 70
11 1 2 71
8 2 2 72
9 2 2 73
10 2 2 74
11 2 2 75
8 3 2 76
9 3 2 77
10 3 2 78
11 3 2 79
8 4 2 80
9 4 2 81
10 4 2 82
11 4 2 83
8 5 2 84
9 5 2 85
10 5 2 86
11 5 2 87
8 6 2 88
9 6 2 89
10 6 2 90
11 6 2 91
8 7 2 92
9 7 2 93
10 7 2 94
11 7 2 95
EOD
set terminal pngcairo size 1100,480 font 'monospace,10'
set output out
set termoption noenhanced
set multiplot layout 1,2
unset colorbox
set yrange [] reverse
set size ratio -1
set tics out nomirror
set palette defined (0 '#9ecae1', 1 '#fdd0a2', 2 '#c7e9c0', 3 '#dadaeb')
set cbrange [0:3]
set xlabel 'p (column of A)'
set ylabel 'i (row of A)'
set title 'block of A, 6 x 8: panels of mr = 3 rows'
plot $A using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette notitle, $A using 1:2:(sprintf('%d', $4)) with labels notitle
set xlabel 'j (column of B)'
set ylabel 'p (row of B)'
set title 'slice of B, 8 x 12: panels of nr = 4 columns'
plot $B using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette notitle, $B using 1:2:(sprintf('%d', $4)) with labels notitle
unset multiplot
