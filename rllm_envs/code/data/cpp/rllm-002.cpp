#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    std::string line;
    std::getline(std::cin, line);
    std::istringstream in(line);
    std::vector<std::string> words;
    std::string w;
    while (in >> w) words.push_back(w);
    std::string out;
    for (std::size_t i = words.size(); i-- > 0;) {
        if (!out.empty()) out += ' ';
        out += words[i];
    }
    std::cout << out << '\n';
    return 0;
}
